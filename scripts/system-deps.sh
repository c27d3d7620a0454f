#!/usr/bin/env bash
# Installs the Debian packages the test suite needs, once. Run by `npm test` ("pretest").
#   - openmpi-bin: `mpirun` for the MPI launch tests (test/integration/**/mpirun.test.ts).
#   - libopenmpi-dev: mpi.h for `mpicc` (test/integration/slurm/mpi-ring.test.ts compiles a real
#     MPI program; openmpi-bin alone has the mpicc wrapper but no headers). It brings
#     libpmix-dev, whose unversioned libpmix.so is what Slurm's mpi/pmix plugin loads (libpmix2
#     alone: "pmi/pmix: can not load PMIx library"); scripts/slurm-up.sh restarts its slurmd
#     daemons when that changes under them.
#   - python3-msgpack: the msgpack package of the system's python3, which Python function workers
#     (workers/python_worker.py) need; the tests run them with /usr/bin/python3.
#   - python3-cloudpickle: the Python client's remote functions (python/pilotfish) pickle
#     closures with it, on the client's side and in the workers (workers/pilotfish_remote.py).
#   - jupyter-nbconvert, python3-ipykernel: test/integration/python/notebook.test.ts executes a
#     real notebook headless (nbconvert --execute) with the system's python3 as its kernel.
#   - python3-pip, python3-setuptools, python3-wheel: test/integration/python/packaging.test.ts
#     installs the client (python/pyproject.toml) into a virtual environment, offline.
#   - qemu-system-x86, linux-image-amd64, busybox-static: the test machine with a cgroup v2 tree
#     alone (test/support/vm.ts), in which test/integration/agent/cgroup-v2-limits.test.ts checks
#     the task limits of machines without cgroup v1 (this kind of host has v1 controllers).
#   - chromium: the headless browser that test/integration/cli/timeline-browser.test.ts loads the
#     timeline page in (driven over its DevTools pipe; Debian's chromium-headless-shell does too).
# Idempotent and a fast no-op when everything is present. Without root it only prints what
# to install and exits 0: the tests that need a missing tool then report themselves skipped.
set -euo pipefail

missing=()
command -v mpirun >/dev/null 2>&1 || missing+=(openmpi-bin)
# mpi.h: compiles through the wrapper (tens of ms), whatever the architecture's include path
if ! command -v mpicc >/dev/null 2>&1 ||
  ! echo '#include <mpi.h>' | mpicc -E -x c - >/dev/null 2>&1; then
  missing+=(libopenmpi-dev)
fi
command -v "${CC:-cc}" >/dev/null 2>&1 || missing+=(gcc libc6-dev) # native/spawner
command -v "${CXX:-c++}" >/dev/null 2>&1 || missing+=(g++)        # native/memory
# Python function workers; a system without python3 has no Python functions to test
if [ -x /usr/bin/python3 ] && ! /usr/bin/python3 -c 'import msgpack' >/dev/null 2>&1; then
  missing+=(python3-msgpack)
fi
if [ -x /usr/bin/python3 ] && ! /usr/bin/python3 -c 'import cloudpickle' >/dev/null 2>&1; then
  missing+=(python3-cloudpickle)
fi
if [ -x /usr/bin/python3 ] && { ! command -v jupyter-nbconvert >/dev/null 2>&1 ||
  ! /usr/bin/python3 -c 'import ipykernel' >/dev/null 2>&1; }; then
  missing+=(jupyter-nbconvert python3-ipykernel)
fi
if [ -x /usr/bin/python3 ] && ! /usr/bin/python3 -c 'import setuptools, wheel, pip' >/dev/null 2>&1; then
  missing+=(python3-pip python3-setuptools python3-wheel)
fi

# the cgroup v2 test machine (x86-64 only: Debian's amd64 kernel under qemu-system-x86_64)
if [ "$(uname -m)" = x86_64 ]; then
  command -v qemu-system-x86_64 >/dev/null 2>&1 || missing+=(qemu-system-x86)
  [ -x /bin/busybox ] || missing+=(busybox-static)
  compgen -G '/boot/vmlinuz-*' >/dev/null || missing+=(linux-image-amd64)
fi

# the timeline's browser test (test/support/chromium.ts looks in the same places)
if [ ! -x /usr/lib/chromium/chromium ] && [ ! -x /usr/bin/chromium-headless-shell ] &&
  ! command -v chromium >/dev/null 2>&1; then
  missing+=(chromium)
fi

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "system-deps: missing Debian packages: ${missing[*]}" >&2
  echo "system-deps: install them as root (apt-get install ${missing[*]}) or run" \
    "'sudo bash scripts/system-deps.sh'; the tests that need them are skipped until then." >&2
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "system-deps: no apt-get here; install by hand: ${missing[*]}" >&2
  exit 0
fi

echo "system-deps: installing ${missing[*]}" >&2
apt_opts=(-o DPkg::Lock::Timeout=600)
apt-get "${apt_opts[@]}" update -qq
DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install -y -qq \
  --no-install-recommends "${missing[@]}" >/dev/null
command -v mpirun >/dev/null 2>&1 || {
  echo "system-deps: openmpi-bin installed but mpirun is still not on PATH" >&2
  exit 1
}
echo '#include <mpi.h>' | mpicc -E -x c - >/dev/null 2>&1 || {
  echo "system-deps: libopenmpi-dev installed but mpicc still finds no mpi.h" >&2
  exit 1
}
