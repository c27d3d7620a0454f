import type * as zmq from 'zeromq';
import { decode, encode } from './codec';

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
    const frame = encode(value);
    const next = this.chain.then(() => (this.closed ? undefined : this.sock.send(frame)));
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** Waits for queued sends, then closes (the socket's linger lets libzmq flush them). */
  async close(): Promise<void> {
    await this.chain;
    this.closed = true;
    this.sock.close();
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
