#!/usr/bin/env bash
# Prints the path of the Distribution registry from Debian's docker-registry package (2.8 in bookworm),
# unpacked into .cache/ rather than installed, so tests run it on their own port and storage.
exec "$(dirname "${BASH_SOURCE[0]}")/deb-tool.sh" docker-registry usr/bin/docker-registry docker-registry
