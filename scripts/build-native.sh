#!/usr/bin/env bash
# Builds the native spawner helper (native/spawner/pf-spawner.c) into dist/native/pf-spawner.
# Run by `npm run build`. Idempotent: a no-op when the binary is newer than its source and was
# built with the same command. Without a working C compiler (${CC:-cc}) it prints one warning and
# exits 0: the SpawnerPool then runs the Node helper (spawner-main.ts) instead, and says so.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$root/native/spawner/pf-spawner.c"
out="$root/dist/native/pf-spawner"
cc="${CC:-cc}"
# shellcheck disable=SC2206 # CC may carry flags ("gcc -m64"), as make allows
cmd=($cc -std=c11 -O2 -Wall -Wextra -Werror ${CFLAGS:-} -o "$out.tmp" "$src")

if [ -x "$out" ] && [ "$out" -nt "$src" ] && [ "$(cat "$out.cmd" 2>/dev/null)" = "${cmd[*]}" ]; then
  exit 0
fi

# A compiler that cannot build a trivial program (missing, or no C library headers) is none.
probe="$(mktemp -d)"
trap 'rm -rf "$probe"' EXIT
printf '#include <spawn.h>\nint main(void) { return 0; }\n' >"$probe/p.c"
if ! command -v "${cmd[0]}" >/dev/null 2>&1 || ! $cc -o "$probe/p" "$probe/p.c" >/dev/null 2>&1; then
  echo "build-native: no working C compiler ('$cc'): pf-spawner not built; the spawner pool will use the slower Node helper (install gcc and libc6-dev, then rebuild)" >&2
  rm -f "$out" "$out.cmd" # never leave a binary older than its source
  exit 0
fi

mkdir -p "$(dirname "$out")"
"${cmd[@]}"
mv -f "$out.tmp" "$out"
printf '%s\n' "${cmd[*]}" >"$out.cmd"
