import type * as zmq from 'zeromq';
import { TransportError } from '../errors';
import { decode, encode } from './codec';

/**
 * The largest message any socket of a session accepts (`maxMessageSize` on every receiving
 * socket: libzmq drops the connection of a peer that sends more, before holding it in memory).
 * Senders split bulks to stay under it (QueueSender); legitimate messages are a few MB at most.
 */
export const MAX_MESSAGE_BYTES = 64 * 2 ** 20;

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
