#!/usr/bin/env bash
# Builds test/re2/program-size.cc (C++ RE2 judging regexes as Envoy does: the
# oracle for src/routing/re2-check.ts) against Debian's libre2-dev, installing
# it and g++ with apt-get when missing, and caches the binary outside the repo,
# keyed by a hash of the source, the compiler and the library's version. The
# last line of output is the binary's path; progress and errors go to stderr.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src="$root/test/re2/program-size.cc"

die() { echo "re2-oracle: $*" >&2; exit 1; }
[ -f "$src" ] || die "no source at $src"

cache=${EDGE_TESTBIN_DIR:-$HOME/.cache/edge-operator/testbin}
mkdir -p "$cache"
start=$(date +%s)

# One build (and one apt-get) at a time: test files may ask at once.
exec 9>"$cache/.re2-oracle.lock"
flock 9

have_tools() { command -v g++ >/dev/null 2>&1 && [ -f /usr/include/re2/re2.h ] && dpkg-query -W libre2-dev >/dev/null 2>&1; }
if ! have_tools; then
  [ "$(id -u)" = 0 ] || die "libre2-dev and g++ are missing and installing them needs root: apt-get install libre2-dev g++"
  command -v apt-get >/dev/null 2>&1 || die "libre2-dev and g++ are missing and there is no apt-get (Debian's packages are the oracle)"
  echo "re2-oracle: installing libre2-dev and g++ with apt-get ($(date +%T))" >&2
  apt-get update >&2 || die "apt-get update failed (see above)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libre2-dev g++ >&2 ||
    die "apt-get install libre2-dev g++ failed (see above)"
  have_tools || die "libre2-dev and g++ still missing after apt-get install"
fi

# The key: the source, the compiler and RE2's version (another RE2 is another oracle).
re2ver=$(dpkg-query -W -f '${Version}' libre2-dev)
key=$({ cat -- "$src"; g++ --version | head -1; echo "$re2ver"; } | sha256sum | cut -c1-16)
dir="$cache/re2-oracle-$key"
bin="$dir/program-size"

if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.build.XXXXXX")
# A failed build leaves no empty directory behind.
trap 'rm -rf "$tmp"; rmdir "$dir" 2>/dev/null || true' EXIT
echo "re2-oracle: building test/re2/program-size.cc against libre2-dev $re2ver into $dir" >&2
# RE2 from 2023 on needs Abseil's flags too; pkg-config knows them when it is there.
flags=$(pkg-config --cflags --libs re2 2>/dev/null || echo -lre2)
# shellcheck disable=SC2086 # the flags are words
g++ -std=c++17 -O2 -Wall -Wextra -o "$tmp/program-size" "$src" $flags >&2 || die "g++ failed (see above)"
# A binary that cannot judge one pattern is no oracle.
[ "$(printf '61\n' | "$tmp/program-size")" != "" ] || die "the built oracle answers nothing"
mv "$tmp/program-size" "$bin"
echo "re2-oracle: ready in $(($(date +%s) - start))s (libre2-dev $re2ver)" >&2
echo "$bin"
