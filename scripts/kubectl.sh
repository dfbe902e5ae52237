#!/usr/bin/env bash
# Prints the path of a kubectl from Debian's kubernetes-client package (1.20 in bookworm), unpacked into
# .cache/ so that the machine's own kubectl (on this image a google-cloud-sdk dispatcher) is never replaced.
exec "$(dirname "${BASH_SOURCE[0]}")/deb-tool.sh" kubernetes-client usr/bin/kubectl kubectl
