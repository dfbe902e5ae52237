#!/usr/bin/env bash
# Prints the path of the Distribution registry binary from Debian's docker-registry package (2.8 in
# bookworm), unpacked into <repo>/.cache/docker-registry rather than installed, so that no system service
# or user is set up and tests run it on their own port and storage. Quiet and idempotent once unpacked;
# concurrent runs are safe (each unpacks privately and renames into place).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$repo/.cache/docker-registry"
bin="$dest/usr/bin/docker-registry"

if [[ -x "$bin" ]]; then
  echo "$bin"
  exit 0
fi

fail() {
  echo "scripts/docker-registry.sh: $*" >&2
  exit 1
}

command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1 ||
  fail "needs apt-get and dpkg (a Debian or Ubuntu machine) to fetch the docker-registry package"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

download() {
  (cd "$work" && LC_ALL=C apt-get download -q docker-registry) >"$work/apt.log" 2>&1
}

if ! download; then
  # A fresh machine (e.g. a CI container) has no package lists yet; fetch them once and retry.
  if grep -qE "Unable to locate package|has no installation candidate|Can't select candidate" "$work/apt.log"; then
    if ! LC_ALL=C apt-get update -q >"$work/update.log" 2>&1; then
      cat "$work/update.log" >&2
      fail "apt-get update failed (it needs root and network access); cannot fetch docker-registry"
    fi
    download || {
      cat "$work/apt.log" >&2
      fail "apt-get download docker-registry failed after apt-get update"
    }
  else
    cat "$work/apt.log" >&2
    fail "apt-get download docker-registry failed"
  fi
fi

debs=("$work"/docker-registry_*.deb)
deb="${debs[0]}"
[[ -f "$deb" ]] || fail "apt-get download did not produce a docker-registry .deb"

# Unpack next to the destination and rename it into place, so a concurrent run never sees half a tree.
mkdir -p "$repo/.cache"
staging="$(mktemp -d "$repo/.cache/docker-registry.XXXXXX")"
if ! dpkg -x "$deb" "$staging" >"$work/dpkg.log" 2>&1; then
  cat "$work/dpkg.log" >&2
  rm -rf "$staging"
  fail "dpkg -x $(basename "$deb") failed"
fi
[[ -x "$staging/usr/bin/docker-registry" ]] || {
  rm -rf "$staging"
  fail "$(basename "$deb") has no usr/bin/docker-registry"
}
chmod 755 "$staging"
if ! mv -T "$staging" "$dest" 2>/dev/null; then
  # Another run got there first; use its copy.
  rm -rf "$staging"
fi
[[ -x "$bin" ]] || fail "$bin is missing after unpacking"
echo "$bin"
