#!/usr/bin/env bash
# Makes `prometheus` and `promtool` available for the metrics tests: Debian's
# `prometheus` package (2.42 on Debian 12, which carries promtool), installed
# with apt-get when either is missing. Idempotent: a second run installs
# nothing. The last line of output is the directory that holds both binaries;
# everything else goes to stderr.
set -euo pipefail

die() { echo "prometheus: $*" >&2; exit 1; }
have() { command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; }

if ! have; then
  command -v apt-get >/dev/null 2>&1 || die "prometheus/promtool are missing and apt-get is not available: install Debian's prometheus package"
  [ "$(id -u)" = 0 ] || die "prometheus/promtool are missing: run 'apt-get install -y prometheus' as root"
  echo "prometheus: installing Debian's prometheus package ($(date +%T))" >&2
  export DEBIAN_FRONTEND=noninteractive
  # Another apt run may hold the lock for a while: wait for it (bounded), not fail.
  opts=(-o DPkg::Lock::Timeout=300 -y --no-install-recommends)
  apt-get "${opts[@]}" install prometheus >&2 || {
    apt-get -o DPkg::Lock::Timeout=300 update >&2
    apt-get "${opts[@]}" install prometheus >&2
  }
  # The package starts a system service on install; the tests run their own.
  if command -v systemctl >/dev/null 2>&1; then systemctl disable --now prometheus >/dev/null 2>&1 || true; fi
  have || die "apt-get installed prometheus but prometheus/promtool are still not on PATH"
fi

dirname "$(command -v promtool)"
