import { existsSync, readFileSync, watch, type FSWatcher } from 'node:fs';
import { withTimeout } from '../../src/lib/deferred';

/**
 * The pid a task's shell wrote into `dir/file` (`echo $$ > pid`), once the whole line is there:
 * AGENT_EXECUTING is notified before the task's first line runs. The watcher is closed on a
 * timeout too, or it would keep jest from exiting after the failing test.
 */
export function pidWritten(dir: string, file = 'pid', timeoutMs = 10_000): Promise<number> {
  const read = (): number | undefined => {
    const p = `${dir}/${file}`;
    const text = existsSync(p) ? readFileSync(p, 'utf8') : '';
    return /\n$/.test(text) ? Number(text.trim()) : undefined;
  };
  let watcher: FSWatcher | undefined;
  return withTimeout(
    new Promise<number>((resolve) => {
      watcher = watch(dir, () => {
        const pid = read();
        if (pid !== undefined) resolve(pid);
      });
      const pid = read();
      if (pid !== undefined) resolve(pid);
    }),
    timeoutMs,
    `${file} in ${dir}`,
  ).finally(() => watcher?.close());
}
