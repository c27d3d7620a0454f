import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Logger } from '../../src/lib/logger';

/** Every file under `root` whose bytes hold `text` (a password that must not be written). */
export function filesHolding(root: string, text: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(root, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    const file = path.join(e.parentPath, e.name);
    if (readFileSync(file).includes(text)) out.push(file);
  }
  return out.sort();
}

/** A Logger that keeps every line it is given, meta included, as JSON text. */
export function recordingLogger(
  lines: string[] = [],
  bound: object = {},
): Logger & {
  lines: string[];
} {
  const at =
    (level: string) =>
    (message: string, meta?: Record<string, unknown>): void =>
      void lines.push(JSON.stringify({ level, message, ...bound, ...meta }));
  return {
    lines,
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    debug: at('debug'),
    child: (meta) => recordingLogger(lines, { ...bound, ...meta }),
  };
}
