#!/usr/bin/env bash
# Builds hack/xds-go (grpc-go's xDS client and an Envoy resource validator, for
# the tests) and caches the binary outside the repo, keyed by a hash of the
# module's files. The last line of output is the binary's path; progress and
# errors go to stderr.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src="$root/hack/xds-go"

die() { echo "xds-go: $*" >&2; exit 1; }
command -v go >/dev/null 2>&1 || die "Go is not installed: hack/xds-go is built from Go modules (install Go 1.26+)"
[ -f "$src/go.mod" ] || die "no module at $src"

# The key: each file's name and content, in a fixed order, and Go's version
# (a binary built by another toolchain is another binary).
key=$(
  cd "$src"
  { go env GOVERSION; for f in go.mod go.sum $(ls -- *.go | LC_ALL=C sort); do echo "$f"; cat -- "$f"; done; } |
    sha256sum | cut -c1-16
)
cache=${EDGE_TESTBIN_DIR:-$HOME/.cache/edge-operator/testbin}
dir="$cache/xds-go-$key"
bin="$dir/xds-go"

if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.build.XXXXXX")
# A failed build leaves no empty directory behind.
trap 'rm -rf "$tmp"; rmdir "$dir" 2>/dev/null || true' EXIT
echo "xds-go: building hack/xds-go into $dir ($(date +%T))" >&2
start=$(date +%s)
# -mod=readonly: the build uses go.mod and go.sum as committed, never edits them.
if ! (cd "$src" && CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "-s -w" -o "$tmp/xds-go" . >&2); then
  die "go build of hack/xds-go failed (see above)"
fi
mv "$tmp/xds-go" "$bin"
echo "xds-go: built in $(($(date +%s) - start))s" >&2
echo "$bin"
