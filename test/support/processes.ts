import { TimeoutError } from '../../src/errors';

import { readFileSync } from 'node:fs';

/** The process's state letter from /proc (R, S, D, Z, ...), or undefined once it is gone. */
function procState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  } catch {
    return undefined;
  }
}

/** A zombie has exited: only its parent (init, for an orphan) has not reaped it yet. */
function alive(pid: number): boolean {
  const state = procState(pid);
  return state !== undefined && state !== 'Z' && state !== 'X';
}

/**
 * Resolves once a process that is not our child has exited (no exit event exists for those,
 * so this polls /proc via kill 0), or rejects after `timeoutMs`.
 */
export function waitForExit(
  pid: number,
  timeoutMs: number,
  /** Wait until its parent has reaped it too (gone from /proc), not only until it exited. */
  opts: { reaped?: boolean } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const done = (): boolean => (opts.reaped === true ? procState(pid) === undefined : !alive(pid));
  return new Promise((resolve, reject) => {
    const check = (): void => {
      if (done()) return resolve();
      if (Date.now() > deadline) {
        return reject(
          new TimeoutError(
            `process ${pid} still alive after ${timeoutMs} ms (state ${procState(pid)})`,
          ),
        );
      }
      setTimeout(check, 25);
    };
    check();
  });
}
