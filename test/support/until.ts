import { TimeoutError } from '../../src/errors';

/**
 * Looks at `look()` every `everyMs` until `ok` holds of what it gives, and resolves with that;
 * rejects after `timeoutMs`, naming `what` and the last thing seen. For state that no event
 * announces (a pilot's liveness, a status reply over a socket or HTTP).
 */
export async function until<T>(
  look: () => T | Promise<T>,
  ok: (seen: T) => boolean,
  what: string,
  timeoutMs: number,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const seen = await look();
    if (ok(seen)) return seen;
    if (Date.now() > deadline) {
      throw new TimeoutError(`${what}: not after ${timeoutMs} ms (last: ${JSON.stringify(seen)})`);
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
