import { existsSync, readFileSync, watch, type FSWatcher } from 'node:fs';
import * as path from 'node:path';
import { withTimeout } from '../../src/lib/deferred';

/**
 * The pid a task's shell wrote into `dir/file` (`echo $$ > pid`), once the whole line is there:
 * AGENT_EXECUTING is notified before the task's first line runs. The watcher is closed on a
 * timeout too, or it would keep jest from exiting after the failing test. `dir` may not exist
 * yet (a spawner helper makes a task's own directory as it starts it): its parent is watched
 * until it does.
 */
export function pidWritten(dir: string, file = 'pid', timeoutMs = 10_000): Promise<number> {
  const read = (): number | undefined => {
    const p = `${dir}/${file}`;
    const text = existsSync(p) ? readFileSync(p, 'utf8') : '';
    return /\n$/.test(text) ? Number(text.trim()) : undefined;
  };
  const watchers: FSWatcher[] = [];
  return withTimeout(
    new Promise<number>((resolve) => {
      const check = (): void => {
        if (watchers.length < 2 && existsSync(dir)) watchers.push(watch(dir, check));
        const pid = read();
        if (pid !== undefined) resolve(pid);
      };
      watchers.push(watch(path.dirname(dir), check));
      check();
    }),
    timeoutMs,
    `${file} in ${dir}`,
  ).finally(() => watchers.forEach((w) => w.close()));
}
