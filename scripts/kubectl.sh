#!/usr/bin/env bash
# Prints the path of a kubectl from Debian's kubernetes-client package (1.20 in bookworm), unpacked into
# <repo>/.cache/kubectl so that the machine's own kubectl (on this image a google-cloud-sdk dispatcher at
# /usr/bin/kubectl) is never replaced. Quiet and idempotent once unpacked.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$repo/.cache/kubectl"
bin="$dest/usr/bin/kubectl"

if [[ -x "$bin" ]]; then
  echo "$bin"
  exit 0
fi

fail() {
  echo "scripts/kubectl.sh: $*" >&2
  exit 1
}

command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1 ||
  fail "needs apt-get and dpkg (a Debian or Ubuntu machine) to fetch the kubernetes-client package"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

download() {
  (cd "$work" && LC_ALL=C apt-get download -q kubernetes-client) >"$work/apt.log" 2>&1
}

if ! download; then
  # A fresh machine (e.g. a CI container) has no package lists yet; fetch them once and retry.
  if grep -qE "Unable to locate package|has no installation candidate|Can't select candidate" "$work/apt.log"; then
    if ! LC_ALL=C apt-get update -q >"$work/update.log" 2>&1; then
      cat "$work/update.log" >&2
      fail "apt-get update failed (it needs root and network access); cannot fetch kubernetes-client"
    fi
    download || {
      cat "$work/apt.log" >&2
      fail "apt-get download kubernetes-client failed after apt-get update"
    }
  else
    cat "$work/apt.log" >&2
    fail "apt-get download kubernetes-client failed"
  fi
fi

debs=("$work"/kubernetes-client_*.deb)
deb="${debs[0]}"
[[ -f "$deb" ]] || fail "apt-get download did not produce a kubernetes-client .deb"

# Unpack next to the destination and rename it into place, so a concurrent run never sees half a tree.
mkdir -p "$repo/.cache"
staging="$(mktemp -d "$repo/.cache/kubectl.XXXXXX")"
if ! dpkg -x "$deb" "$staging" >"$work/dpkg.log" 2>&1; then
  cat "$work/dpkg.log" >&2
  rm -rf "$staging"
  fail "dpkg -x $(basename "$deb") failed"
fi
[[ -x "$staging/usr/bin/kubectl" ]] || {
  rm -rf "$staging"
  fail "$(basename "$deb") has no usr/bin/kubectl"
}
chmod 755 "$staging"
if ! mv -T "$staging" "$dest" 2>/dev/null; then
  # Another run got there first; use its copy.
  rm -rf "$staging"
fi
[[ -x "$bin" ]] || fail "$bin is missing after unpacking"
echo "$bin"
