import type * as zmq from 'zeromq';
import { TransportError } from '../errors';
import { decode, encode } from './codec';

/**
 * The largest message any socket of a session accepts (`maxMessageSize` on every receiving
 * socket: libzmq drops the connection of a peer that sends more, before holding it in memory).
 * Senders split bulks to stay under it (QueueSender); legitimate messages are a few MB at most.
 */
export const MAX_MESSAGE_BYTES = 64 * 2 ** 20;

/**
 * The largest task description a session takes (encoded): a task goes to its agent in one
 * message, with its record's other fields (1 MiB is left for those).
 */
export const MAX_TASK_BYTES = MAX_MESSAGE_BYTES - 2 ** 20;

export type Decoded = { ok: true; value: unknown } | { ok: false; error: Error };

/**
 * Serializes sends on one socket (zeromq.js allows one pending send per socket); each promise
 * resolves once its message is queued in libzmq. Used by queue senders and publishers alike.
 */
export class SerialSender {
  private chain: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly sock: zmq.Writable & zmq.Socket) {}

  send(value: unknown): Promise<void> {
    return this.sendFrame(encode(value));
  }

  /** Sends an encoded message; one over MAX_MESSAGE_BYTES is refused (no peer would take it). */
  sendFrame(frame: Uint8Array): Promise<void> {
    if (frame.length > MAX_MESSAGE_BYTES) {
      return Promise.reject(
        new TransportError(
          `message of ${frame.length} bytes is over the ${MAX_MESSAGE_BYTES}-byte limit`,
        ),
      );
    }
    const next = this.chain.then(() => (this.closed ? undefined : this.sendNow(frame)));
    this.chain = next.catch(() => undefined);
    return next;
  }

  /**
   * Waits for queued sends (for at most `withinMs`, if given), then closes (the socket's linger
   * lets libzmq flush what it holds). A send still waiting then is dropped, quietly: closing
   * was the caller's choice.
   */
  async close(withinMs?: number): Promise<void> {
    if (withinMs === undefined) await this.chain;
    else await settledWithin(this.chain, withinMs);
    this.closed = true;
    this.sock.close();
  }

  /** zeromq.js rejects a send pending at close (EAGAIN): that one is dropped, not failed. */
  private async sendNow(frame: Uint8Array): Promise<void> {
    try {
      await this.sock.send(frame);
    } catch (e) {
      if (!this.closed) throw e;
    }
  }
}

/**
 * Moves a connecting socket from `from` to `to` (an agent whose client listens elsewhere now),
 * and returns `to`; the socket, its options (CURVE keys) and what it subscribed to stay. What
 * the socket held for the old connection and never sent goes with it: libzmq drops a pipe's
 * messages when its endpoint is disconnected.
 */
export function moveConnection(sock: zmq.Socket, from: string, to: string): string {
  if (from === to || sock.closed) return from;
  sock.disconnect(from);
  sock.connect(to);
  return to;
}

/** Resolves once `p` settles or `ms` have passed, whichever is first. */
async function settledWithin(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  try {
    await Promise.race([p.then(undefined, () => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Yields each decoded message, or the decode error so the caller can report it, until closed. */
export async function* decodedMessages(sock: zmq.Readable & zmq.Socket): AsyncGenerator<Decoded> {
  try {
    for await (const [frame] of sock) {
      if (frame === undefined) continue;
      try {
        yield { ok: true, value: decode(frame) };
      } catch (e) {
        yield { ok: false, error: e instanceof Error ? e : new Error(String(e)) };
      }
    }
  } catch (e) {
    if (!sock.closed) throw e;
  }
}
