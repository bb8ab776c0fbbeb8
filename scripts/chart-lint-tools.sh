#!/usr/bin/env bash
# Builds the chart linters the tests run (kube-score) from their Go modules at
# a pinned version, and caches them outside the repo like scripts/testbin.sh.
# helm comes from scripts/testbin.sh. The last line of output is the directory
# that holds the binaries; progress and errors go to stderr.
set -euo pipefail

die() { echo "chart-lint-tools: $*" >&2; exit 1; }
command -v go >/dev/null 2>&1 || die "Go is not installed: kube-score is built from its Go module (install Go 1.26+)"

# kube-score 1.20: the version users of operator charts run.
kube_score=v1.20.0

cache=${EDGE_LINT_TOOLS_DIR:-$HOME/.cache/edge-operator/lint-tools}
dir="$cache/kube-score-${kube_score#v}"
bin="$dir/kube-score"

if [ -x "$bin" ]; then
  echo "$dir"
  exit 0
fi

mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.build.XXXXXX")
# A failed build leaves no empty directory behind.
trap 'rm -rf "$tmp"; rmdir "$dir" 2>/dev/null || true' EXIT
echo "chart-lint-tools: building kube-score $kube_score ($(date +%T))" >&2
start=$(date +%s)
# GOBIN: go install writes the binary there and nowhere else; GOFLAGS from the
# environment (-mod=...) would not apply to a module@version install.
if ! CGO_ENABLED=0 GOFLAGS= GOBIN="$tmp" go install -trimpath -ldflags "-s -w" \
  "github.com/zegl/kube-score/cmd/kube-score@$kube_score" >&2; then
  die "go install of kube-score $kube_score failed (see above)"
fi
mv "$tmp/kube-score" "$bin"
echo "chart-lint-tools: built kube-score in $(($(date +%s) - start))s" >&2
echo "$dir"
