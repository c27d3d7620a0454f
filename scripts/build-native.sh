#!/usr/bin/env bash
# Builds the native parts into dist/native/ (run by `npm run build`):
#   - pf-spawner (native/spawner/pf-spawner.c): the Executor's spawner helper;
#   - pf-memory.node (native/memory/pf-memory.c): the client's C-heap trim (Node-API addon).
# Idempotent: a target is a no-op when it is newer than its source and was built with the same
# command. Without a working C compiler (${CC:-cc}) it prints one warning and exits 0: the
# SpawnerPool then runs the Node helper (spawner-main.ts) and the client does not trim its C
# heap, and both say so. pf-memory needs glibc >= 2.33 (mallinfo2); where it does not build,
# a warning says why and the build goes on without it.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cc="${CC:-cc}"

# A compiler that cannot build a trivial program (missing, or no C library headers) is none.
probe="$(mktemp -d)"
trap 'rm -rf "$probe"' EXIT
printf '#include <spawn.h>\nint main(void) { return 0; }\n' >"$probe/p.c"
if ! command -v "${cc%% *}" >/dev/null 2>&1 || ! $cc -o "$probe/p" "$probe/p.c" >/dev/null 2>&1; then
  echo "build-native: no working C compiler ('$cc'): pf-spawner and pf-memory not built; the spawner pool will use the slower Node helper and the client will not return its free C heap to the kernel (install gcc and libc6-dev, then rebuild)" >&2
  rm -f "$root"/dist/native/pf-spawner{,.cmd} "$root"/dist/native/pf-memory.node{,.cmd} # never older than their sources
  exit 0
fi
mkdir -p "$root/dist/native"

# build SRC OUT FLAGS...: compiles SRC into OUT unless OUT is up to date; returns the compiler's
# status.
build() {
  local src="$root/$1" out="$root/$2"
  shift 2
  # shellcheck disable=SC2206 # CC may carry flags ("gcc -m64"), as make allows
  local cmd=($cc -std=c11 -O2 -Wall -Wextra -Werror ${CFLAGS:-} "$@" -o "$out.tmp" "$src")
  if [ -e "$out" ] && [ "$out" -nt "$src" ] && [ "$(cat "$out.cmd" 2>/dev/null)" = "${cmd[*]}" ]; then
    return 0
  fi
  rm -f "$out" "$out.cmd"
  "${cmd[@]}" || return
  mv -f "$out.tmp" "$out"
  printf '%s\n' "${cmd[*]}" >"$out.cmd"
}

build native/spawner/pf-spawner.c dist/native/pf-spawner
if ! build native/memory/pf-memory.c dist/native/pf-memory.node -shared -fPIC; then
  echo "build-native: pf-memory not built (needs glibc >= 2.33 for mallinfo2): the client will not return its free C heap to the kernel" >&2
fi
