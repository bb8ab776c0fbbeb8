#!/usr/bin/env bash
# Builds the test control plane's binaries (kube-apiserver, kubectl, etcd, helm)
# from their Go modules at the versions pinned in hack/testbin/*/go.mod, and
# caches them outside the repo. The last line of output is the directory that
# holds the four binaries; everything else goes to stderr.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
hack="$root/hack/testbin"

die() { echo "testbin: $*" >&2; exit 1; }
command -v go >/dev/null 2>&1 || die "Go is not installed: the test control plane is built from Go modules (install Go 1.26+)"

# The pinned versions are read from the wrapper modules: one source of truth.
modver() { (cd "$hack/$1" && go list -m -f '{{.Version}}' "$2"); }
k8s=$(modver kubernetes k8s.io/kubernetes)
etcd=$(modver etcd go.etcd.io/etcd/server/v3)
helm=$(modver helm helm.sh/helm/v3)

cache=${EDGE_TESTBIN_DIR:-$HOME/.cache/edge-operator/testbin}
dir="$cache/k8s-${k8s#v}_etcd-${etcd#v}_helm-${helm#v}"
minor=${k8s#v1.}; minor=${minor%%.*}
# helm's default Kubernetes version (what `helm template` assumes without
# --kube-version; v1.20 unstamped) is stamped to the apiserver's.
helmkube="v1.$minor"
helmok() { [ -x "$dir/helm" ] && [ "$(cat "$dir/helm.kube-version" 2>/dev/null)" = "$helmkube" ]; }

if [ -x "$dir/kube-apiserver" ] && [ -x "$dir/kubectl" ] && [ -x "$dir/etcd" ] && helmok; then
  echo "$dir"
  exit 0
fi

mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.build.XXXXXX")
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT
export CGO_ENABLED=0 GOFLAGS=-mod=mod

# buildDate: the module's publication time, so the stamp is reproducible.
modtime() { (cd "$hack/$1" && go list -m -f '{{.Time.Format "2006-01-02T15:04:05Z"}}' "$2"); }

step() { echo "testbin: $* ($(date +%T))" >&2; }

# Building kube-apiserver is silent for minutes after go's download lines,
# which looks like a hang: while a build runs, say every $every seconds of
# silence what is building and for how long. The build's output passes through
# a reader that times out on silence, so no background job is needed: bash 5.2
# can lose track of a foreground child whose pid an earlier background job had
# ("wait_for: No record of process"), and a long CI run wraps pids. Everything
# goes to stderr (stdout's last line is the directory).
every=${EDGE_TESTBIN_PROGRESS_SECONDS:-20}
elapsed() { local s=$(($(date +%s) - $1)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }
say_progress() {
  local what=$1 start=$2 line status
  while :; do
    IFS= read -r -t "$every" line && status=0 || status=$?
    if [ "$status" -eq 0 ]; then
      printf '%s\n' "$line" >&2
    elif [ "$status" -gt 128 ]; then
      [ -n "$line" ] && printf '%s' "$line" >&2
      echo "testbin: still building $what: $(elapsed "$start") so far ($(date +%T))" >&2
    else
      [ -n "$line" ] && printf '%s\n' "$line" >&2
      return 0
    fi
  done
}
with_progress() {
  local what=$1 start rc=0
  shift
  start=$(date +%s)
  # pipefail: the pipeline fails with the build.
  { "$@" 2>&1; } | say_progress "$what" "$start" || rc=$?
  [ "$rc" -eq 0 ] && echo "testbin: built $what in $(elapsed "$start")" >&2
  return "$rc"
}

# go build in the wrapper module hack/testbin/$1.
gobuild() {
  local module=$1
  shift
  (cd "$hack/$module" && go build -trimpath "$@")
}

if [ ! -x "$dir/kube-apiserver" ] || [ ! -x "$dir/kubectl" ]; then
  date=$(modtime kubernetes k8s.io/kubernetes)
  ld="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X '$pkg.gitVersion=$k8s' -X '$pkg.gitCommit=0000000000000000000000000000000000000000'"
    ld+=" -X '$pkg.gitTreeState=clean' -X '$pkg.buildDate=$date'"
    ld+=" -X '$pkg.gitMajor=1' -X '$pkg.gitMinor=$minor'"
  done
  for cmd in kube-apiserver kubectl; do
    [ -x "$dir/$cmd" ] && continue
    step "building $cmd $k8s from k8s.io/kubernetes (on 2 cores kube-apiserver takes about 9 minutes, kubectl 2)"
    with_progress "$cmd $k8s" gobuild kubernetes -ldflags "$ld" -o "$tmp/$cmd" "k8s.io/kubernetes/cmd/$cmd"
    mv "$tmp/$cmd" "$dir/$cmd"
  done
fi

if [ ! -x "$dir/etcd" ]; then
  step "building etcd $etcd from go.etcd.io/etcd/server/v3"
  with_progress "etcd $etcd" gobuild etcd -ldflags "-s -w" -o "$tmp/etcd" .
  mv "$tmp/etcd" "$dir/etcd"
fi

if ! helmok; then
  step "building helm $helm from helm.sh/helm/v3"
  hv=helm.sh/helm/v3/internal/version
  hk="-X 'helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1' -X 'helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$minor'"
  hk+=" -X 'helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1' -X 'helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$minor'"
  with_progress "helm $helm" gobuild helm \
    -ldflags "-s -w -X '$hv.version=$helm' -X '$hv.gitTreeState=clean' -X '$hv.gitCommit=0000000000000000000000000000000000000000' $hk" \
    -o "$tmp/helm" helm.sh/helm/v3/cmd/helm
  mv "$tmp/helm" "$dir/helm"
  echo "$helmkube" >"$dir/helm.kube-version"
fi

step "done"
echo "$dir"
