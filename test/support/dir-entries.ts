import { readdirSync, watch } from 'node:fs';
import { withTimeout } from '../../src/lib/deferred';

/** Resolves once `dir` holds `count` entries (fs.watch events, with a deadline). */
export function dirEntries(dir: string, count: number, timeoutMs: number): Promise<void> {
  return withTimeout(
    new Promise<void>((resolve) => {
      const w = watch(dir, () => {
        if (readdirSync(dir).length >= count) {
          w.close();
          resolve();
        }
      });
      if (readdirSync(dir).length >= count) {
        w.close();
        resolve();
      }
    }),
    timeoutMs,
    `${count} entries in ${dir}`,
  );
}
