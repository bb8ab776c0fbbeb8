#!/usr/bin/env bash
# Builds the real cluster's binaries on top of the test control plane's
# (scripts/testbin.sh): kubelet, kube-controller-manager, kube-scheduler and
# kube-proxy from k8s.io/kubernetes (same wrapper module and version stamp as
# kube-apiserver), containerd with its runc shim and ctr, a static pause binary
# and its image tarball, image-tar (writes image tarballs without a registry)
# and a tiny HTTP server's image for the cluster's own tests. Installs Debian's
# runc, CNI plugins and nftables when missing.
# Cached outside the repo; the last line of output is the directory that holds
# them. Without root it prints one line saying so, nothing on stdout, and exits
# 0: the out-of-cluster mode needs none of this.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
hack="$root/hack/testbin"

say() { echo "cluster-bin: $*" >&2; }
die() { say "$*"; exit 1; }

if [ "$(uname -s)" != Linux ] || [ "$(id -u)" != 0 ]; then
  say "not building the real cluster: it needs root on Linux (runc, bridges, nftables, mounts); the out-of-cluster mode still works"
  exit 0
fi
command -v go >/dev/null 2>&1 || die "Go is not installed: the cluster is built from Go modules (install Go 1.26+)"

missing=()
command -v runc >/dev/null 2>&1 || missing+=(runc)
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/loopback ] ||
  missing+=(containernetworking-plugins)
command -v nft >/dev/null 2>&1 || missing+=(nftables)
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # The lock timeout lets it wait for image.sh's apt, which the demo runs beside it.
  apt-get update -qq -o DPkg::Lock::Timeout=300 >&2
  apt-get install -y -qq -o DPkg::Lock::Timeout=300 --no-install-recommends "${missing[@]}" >&2
fi

modver() { (cd "$hack/$1" && go list -m -f '{{.Version}}' "$2"); }
modtime() { (cd "$hack/$1" && go list -m -f '{{.Time.Format "2006-01-02T15:04:05Z"}}' "$2"); }
k8s=$(modver kubernetes k8s.io/kubernetes)
ctd=$(modver containerd github.com/containerd/containerd/v2)
# The small images' content is ours: their tag follows the source's hash.
tag=$(cat "$hack/pause/go.mod" "$hack/pause/cmd"/*/main.go | sha256sum | cut -c1-12)

cache=${EDGE_TESTBIN_DIR:-$HOME/.cache/edge-operator/testbin}
dir="$cache/cluster-k8s-${k8s#v}_containerd-${ctd#v}"
bins=(kubelet kube-controller-manager kube-scheduler kube-proxy containerd containerd-shim-runc-v2 ctr pause image-tar pause.tar pause.ref hello hello.tar hello.ref)

images() { [ "$(cat "$dir/pause.ref" 2>/dev/null)" = "localhost/edge-operator/pause:$tag" ]; }
complete() {
  for b in "${bins[@]}"; do [ -e "$dir/$b" ] || return 1; done
  images
}
if complete; then
  echo "$dir"
  exit 0
fi

mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.build.XXXXXX")
ticker=
trap '[ -n "$ticker" ] && kill "$ticker" 2>/dev/null; rm -rf "$tmp"' EXIT
export CGO_ENABLED=0 GOFLAGS=-mod=mod

# A long go build prints nothing for minutes: say every 30 s what is building.
build() {
  local what=$1 mod=$2 started=$SECONDS
  shift 2
  say "building $what ($(date +%T))"
  (while sleep 30; do say "still building $what ($((SECONDS - started)) s)"; done) &
  ticker=$!
  (cd "$hack/$mod" && go build -trimpath "$@")
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  ticker=
  say "built $what in $((SECONDS - started)) s"
}

# Same stamp as kube-apiserver's in scripts/testbin.sh (the node reports it).
minor=${k8s#v1.}; minor=${minor%%.*}
date=$(modtime kubernetes k8s.io/kubernetes)
ld="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ld+=" -X '$pkg.gitVersion=$k8s' -X '$pkg.gitCommit=0000000000000000000000000000000000000000'"
  ld+=" -X '$pkg.gitTreeState=clean' -X '$pkg.buildDate=$date'"
  ld+=" -X '$pkg.gitMajor=1' -X '$pkg.gitMinor=$minor'"
done
for cmd in kubelet kube-controller-manager kube-scheduler kube-proxy; do
  [ -x "$dir/$cmd" ] && continue
  build "$cmd $k8s" kubernetes -ldflags "$ld" -o "$tmp/$cmd" "k8s.io/kubernetes/cmd/$cmd"
  mv "$tmp/$cmd" "$dir/$cmd"
done

cv=github.com/containerd/containerd/v2/version
cld="-s -w -X '$cv.Version=$ctd' -X '$cv.Revision=0000000000000000000000000000000000000000' -X '$cv.Package=github.com/containerd/containerd/v2'"
for cmd in containerd containerd-shim-runc-v2 ctr; do
  [ -x "$dir/$cmd" ] && continue
  build "$cmd $ctd" containerd -tags "no_btrfs no_devmapper no_zfs urfave_cli_no_docs" -ldflags "$cld" \
    -o "$tmp/$cmd" "github.com/containerd/containerd/v2/cmd/$cmd"
  mv "$tmp/$cmd" "$dir/$cmd"
done

if ! images; then
  for cmd in pause image-tar hello; do
    build "$cmd" pause -ldflags "-s -w" -o "$tmp/$cmd" "./cmd/$cmd"
    mv "$tmp/$cmd" "$dir/$cmd"
  done
  "$dir/image-tar" -ref "localhost/edge-operator/pause:$tag" -out "$tmp/pause.tar" \
    -file "$dir/pause=/pause" -entrypoint /pause -user 65535
  # A small HTTP server (answers with the pod's name) for the cluster's own tests.
  "$dir/image-tar" -ref "localhost/edge-operator/hello:$tag" -out "$tmp/hello.tar" \
    -file "$dir/hello=/hello" -entrypoint /hello -user 65532
  mv "$tmp/pause.tar" "$tmp/hello.tar" "$dir/"
  echo "localhost/edge-operator/hello:$tag" >"$dir/hello.ref"
  echo "localhost/edge-operator/pause:$tag" >"$dir/pause.ref"
fi

say "done"
echo "$dir"
