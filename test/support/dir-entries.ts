import { existsSync, readdirSync, watch, type FSWatcher } from 'node:fs';
import * as path from 'node:path';
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

/**
 * Resolves once none of `paths` exists (fs.watch events on their directories, with a deadline):
 * the agent removes a task's empty directory in the background, after the task ended.
 */
export function gone(paths: readonly string[], timeoutMs: number): Promise<void> {
  const left = (): boolean => paths.some((p) => existsSync(p));
  const watchers: FSWatcher[] = [];
  const done = new Promise<void>((resolve) => {
    const check = (): void => {
      if (left()) return;
      for (const w of watchers) w.close();
      resolve();
    };
    for (const dir of new Set(paths.map((p) => path.dirname(p)))) {
      if (existsSync(dir)) watchers.push(watch(dir, check));
    }
    check();
  });
  return withTimeout(done, timeoutMs, `the removal of ${paths.join(', ')}`).finally(() => {
    for (const w of watchers) w.close();
  });
}
