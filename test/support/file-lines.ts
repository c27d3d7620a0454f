import { existsSync, readFileSync, watch } from 'node:fs';
import * as path from 'node:path';
import { withTimeout } from '../../src/lib/deferred';

/** Resolves once `file` has at least `n` lines (fs.watch on its directory, with a deadline). */
export function lines(file: string, n: number, timeoutMs = 60_000): Promise<string[]> {
  const read = (): string[] =>
    existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
  return withTimeout(
    new Promise<string[]>((resolve) => {
      const check = (): boolean => {
        const got = read();
        if (got.length < n) return false;
        w.close();
        resolve(got);
        return true;
      };
      const w = watch(path.dirname(file), check);
      check();
    }),
    timeoutMs,
    `${n} lines in ${file}`,
  );
}

/** Resolves once `file` holds `text` (fs.watch on its directory, with a deadline). */
export function fileContains(file: string, text: string, timeoutMs = 10_000): Promise<void> {
  const holds = (): boolean => existsSync(file) && readFileSync(file, 'utf8').includes(text);
  return withTimeout(
    new Promise<void>((resolve) => {
      const check = (): void => {
        if (!holds()) return;
        w.close();
        resolve();
      };
      const w = watch(path.dirname(file), check);
      check();
    }),
    timeoutMs,
    `'${text}' in ${file}`,
  );
}
