#!/usr/bin/env bash
# Usage: scripts/deb-tool.sh <debian package> <path of the binary inside it> <cache folder name>
# Prints the path of a binary from a Debian package, unpacked into <repo>/.cache/<folder> with
# `apt-get download` + `dpkg -x` rather than installed, so nothing on the machine is replaced or set up
# (no service, no user, no other version of the tool). Quiet and idempotent once unpacked; concurrent
# runs are safe (each unpacks privately and renames into place).
set -euo pipefail

package="$1"
inside="$2"
folder="$3"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$repo/.cache/$folder"
bin="$dest/$inside"

if [[ -x "$bin" ]]; then
  echo "$bin"
  exit 0
fi

fail() {
  echo "scripts/deb-tool.sh ($package): $*" >&2
  exit 1
}

command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1 ||
  fail "needs apt-get and dpkg (a Debian or Ubuntu machine) to fetch the $package package"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

download() {
  (cd "$work" && LC_ALL=C apt-get download -q "$package") >"$work/apt.log" 2>&1
}

if ! download; then
  # A fresh machine (e.g. a CI container) has no package lists yet; fetch them once and retry.
  if grep -qE "Unable to locate package|has no installation candidate|Can't select candidate" "$work/apt.log"; then
    if ! LC_ALL=C apt-get update -q >"$work/update.log" 2>&1; then
      cat "$work/update.log" >&2
      fail "apt-get update failed (it needs root and network access)"
    fi
    download || {
      cat "$work/apt.log" >&2
      fail "apt-get download $package failed after apt-get update"
    }
  else
    cat "$work/apt.log" >&2
    fail "apt-get download $package failed"
  fi
fi

debs=("$work"/"$package"_*.deb)
deb="${debs[0]}"
[[ -f "$deb" ]] || fail "apt-get download did not produce a $package .deb"

# Unpack next to the destination and rename it into place, so a concurrent run never sees half a tree.
mkdir -p "$repo/.cache"
staging="$(mktemp -d "$repo/.cache/$folder.XXXXXX")"
if ! dpkg -x "$deb" "$staging" >"$work/dpkg.log" 2>&1; then
  cat "$work/dpkg.log" >&2
  rm -rf "$staging"
  fail "dpkg -x $(basename "$deb") failed"
fi
[[ -x "$staging/$inside" ]] || {
  rm -rf "$staging"
  fail "$(basename "$deb") has no $inside"
}
chmod 755 "$staging"
if ! mv -T "$staging" "$dest" 2>/dev/null; then
  # Another run got there first; use its copy.
  rm -rf "$staging"
fi
[[ -x "$bin" ]] || fail "$bin is missing after unpacking"
echo "$bin"
