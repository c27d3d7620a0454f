import type * as zmq from 'zeromq';

/** How long a bind waits, by default, for the last socket on its address to free it. */
export const FREED_WITHIN_MS = 5_000;

/**
 * Binds `address` on a socket its caller made (with CurveZMQ server options where it is on
 * TCP: queue.ts, zap.ts), trying again briefly while it is taken (EADDRINUSE). A closed socket frees
 * its address only when libzmq's reaper thread gets to it, so a socket bound right after the
 * last one on that address closed (a queue bound again, a session opened after the last one
 * closed) may find it taken for a few milliseconds. An address still taken after `withinMs`
 * is refused (EADDRINUSE), and the socket closed.
 */
export async function bindWhenFree(
  sock: zmq.Socket,
  address: string,
  withinMs = FREED_WITHIN_MS,
): Promise<void> {
  const deadline = Date.now() + withinMs;
  for (let waitMs = 1; ; waitMs = Math.min(waitMs * 2, 50)) {
    try {
      return await sock.bind(address);
    } catch (e) {
      if ((e as { code?: string }).code !== 'EADDRINUSE' || Date.now() > deadline) {
        sock.close();
        throw e;
      }
    }
    await new Promise((r) => setTimeout(r, waitMs));
  }
}
