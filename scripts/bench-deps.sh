#!/usr/bin/env bash
# Installs the Debian packages of the peers `npm run bench` measures pilotfish against, once.
# Run by bench/references.ts before the peer figures of the `e2e` benchmark (never in --quick).
#   - parallel:            GNU parallel (`gnu_parallel_tasks_per_s`)
#   - python3-distributed: Dask distributed for Debian's /usr/bin/python3 (`dask_tasks_per_s`)
#   - nginx-light:         nginx as the reverse proxy the `router` benchmark compares with (its
#                          own configuration in a temporary directory; the Debian service is
#                          not started: policy-rc.d says no while it installs)
# Idempotent and a fast no-op when everything is present. Exit status: 0 when every package is
# there afterwards; 1 when something is still missing (not root, no apt-get, apt failed), with
# the reason on stderr. The bench then reports the figures of the missing peers as skipped.
set -euo pipefail

missing=()
command -v parallel >/dev/null 2>&1 || missing+=(parallel)
/usr/bin/python3 -c 'import distributed' >/dev/null 2>&1 || missing+=(python3-distributed)
command -v nginx >/dev/null 2>&1 || missing+=(nginx-light)

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "bench-deps: missing Debian packages: ${missing[*]}; not root, so not installing them" \
    "(run 'sudo bash scripts/bench-deps.sh')" >&2
  exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "bench-deps: missing Debian packages: ${missing[*]}; no apt-get here" >&2
  exit 1
fi

echo "bench-deps: installing ${missing[*]}" >&2
apt_opts=(-o DPkg::Lock::Timeout=600)
if ! apt-get "${apt_opts[@]}" update -qq; then
  echo "bench-deps: apt-get update failed (no network?); missing: ${missing[*]}" >&2
  exit 1
fi
# a package's service (nginx's) is not started as it installs: nothing of ours listens on :80
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
  chmod 755 /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
if ! DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install -y -qq \
  --no-install-recommends "${missing[@]}" >&2; then
  echo "bench-deps: apt-get install ${missing[*]} failed" >&2
  exit 1
fi

command -v parallel >/dev/null 2>&1 || {
  echo "bench-deps: parallel installed but 'parallel' is still not on PATH" >&2
  exit 1
}
/usr/bin/python3 -c 'import distributed' >/dev/null 2>&1 || {
  echo "bench-deps: python3-distributed installed but /usr/bin/python3 cannot import it" >&2
  exit 1
}
command -v nginx >/dev/null 2>&1 || {
  echo "bench-deps: nginx-light installed but 'nginx' is still not on PATH" >&2
  exit 1
}
