#!/usr/bin/env bash
# Builds the native parts into dist/native/ (run by `npm run build`):
#   - pf-spawner (native/spawner/pf-spawner.c, C): the Executor's spawner helper;
#   - pf-memory.node (native/memory/pf-memory.cc, C++): the Node-API addon with which the client
#     gives memory back at rest, built against the headers of the Node that runs this script.
# Idempotent: a target is a no-op when it is newer than its source and was built with the same
# command. Each part is optional: without a working compiler (${CC:-cc}, ${CXX:-c++}) or, for
# pf-memory, Node's headers or glibc >= 2.33 (mallinfo2), it prints one warning and goes on;
# the SpawnerPool then runs the Node helper (src/components/executor/process/helper/main.ts) and
# the client keeps the memory it freed, and both say so in their logs.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cc="${CC:-cc}"
cxx="${CXX:-c++}"
probe="$(mktemp -d)"
trap 'rm -rf "$probe"' EXIT
mkdir -p "$root/dist/native"

# works COMPILER SOURCE-TEXT EXT: true if COMPILER builds a trivial program (not missing, and
# its C library headers are there).
works() {
  printf '%s\n' "$2" >"$probe/p.$3"
  command -v "${1%% *}" >/dev/null 2>&1 && $1 -o "$probe/p" "$probe/p.$3" >/dev/null 2>&1
}

# build OUT SRC COMPILER FLAGS...: compiles SRC into OUT unless OUT is up to date; returns the
# compiler's status. A failed build leaves no OUT: never a binary older than its source.
build() {
  local out="$root/$1" src="$root/$2"
  local compiler="$3"
  shift 3
  # shellcheck disable=SC2206 # CC/CXX may carry flags ("gcc -m64"), as make allows
  local cmd=($compiler -O2 -Wall -Wextra -Werror "$@" -o "$out.tmp" "$src")
  if [ -e "$out" ] && [ "$out" -nt "$src" ] && [ "$(cat "$out.cmd" 2>/dev/null)" = "${cmd[*]}" ]; then
    return 0
  fi
  rm -f "$out" "$out.cmd"
  "${cmd[@]}" || return
  mv -f "$out.tmp" "$out"
  printf '%s\n' "${cmd[*]}" >"$out.cmd"
}

spawn_c=$'#include <spawn.h>\nint main(void) { return 0; }'
if works "$cc" "$spawn_c" c; then
  # Linked statically where the C library allows it (libc.a, in libc6-dev): the npm package ships
  # this binary, which then runs on any Linux x86-64, whatever its glibc (a dynamic one built
  # here needs glibc >= 2.34) or musl. Elsewhere the installed package builds its own
  # (scripts/install-native.js).
  static=()
  if works "$cc -static" "$spawn_c" c; then static=(-static); fi
  # shellcheck disable=SC2086 # CFLAGS is a list of flags
  build dist/native/pf-spawner native/spawner/pf-spawner.c "$cc" -std=c11 "${static[@]}" ${CFLAGS:-}
else
  echo "build-native: no working C compiler ('$cc'): pf-spawner not built; the spawner pool will use the slower Node helper (install gcc and libc6-dev, then rebuild)" >&2
  rm -f "$root"/dist/native/pf-spawner{,.cmd}
fi

include="$(node -p "require('path').resolve(process.execPath, '../../include/node')")"
if ! works "$cxx" $'#include <malloc.h>\nint main() { return 0; }' cc; then
  why="no working C++ compiler ('$cxx'; install g++)"
elif [ ! -f "$include/node_api.h" ] || [ ! -f "$include/v8.h" ]; then
  why="no Node headers in $include"
else
  why=""
  # shellcheck disable=SC2086 # CXXFLAGS is a list of flags
  build dist/native/pf-memory.node native/memory/pf-memory.cc "$cxx" -std=c++17 -shared -fPIC \
    -isystem "$include" ${CXXFLAGS:-} || why="it did not compile (glibc >= 2.33 is needed for mallinfo2)"
fi
if [ -n "$why" ]; then
  echo "build-native: pf-memory not built: $why; the client will keep the memory it freed" >&2
  rm -f "$root"/dist/native/pf-memory.node{,.cmd}
fi
