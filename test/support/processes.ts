import { TimeoutError } from '../../src/errors';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Resolves once a process that is not our child has exited (no exit event exists for those,
 * so this polls /proc via kill 0), or rejects after `timeoutMs`.
 */
export function waitForExit(pid: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const check = (): void => {
      if (!alive(pid)) return resolve();
      if (Date.now() > deadline) {
        return reject(new TimeoutError(`process ${pid} still alive after ${timeoutMs} ms`));
      }
      setTimeout(check, 25);
    };
    check();
  });
}
