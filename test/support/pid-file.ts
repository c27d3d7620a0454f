import { existsSync, readFileSync, watch } from 'node:fs';
import { withTimeout } from '../../src/lib/deferred';

/**
 * The pid a task's shell wrote into `dir/file` (`echo $$ > pid`), once the whole line is there:
 * AGENT_EXECUTING is notified before the task's first line runs.
 */
export function pidWritten(dir: string, file = 'pid', timeoutMs = 10_000): Promise<number> {
  const read = (): number | undefined => {
    const p = `${dir}/${file}`;
    const text = existsSync(p) ? readFileSync(p, 'utf8') : '';
    return /\n$/.test(text) ? Number(text.trim()) : undefined;
  };
  return withTimeout(
    new Promise((resolve) => {
      const done = (pid: number): void => {
        watcher.close();
        resolve(pid);
      };
      const watcher = watch(dir, () => {
        const pid = read();
        if (pid !== undefined) done(pid);
      });
      const pid = read();
      if (pid !== undefined) done(pid);
    }),
    timeoutMs,
    `${file} in ${dir}`,
  );
}
