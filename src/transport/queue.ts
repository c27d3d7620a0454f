import * as zmq from 'zeromq';
import { decode, encode } from './codec';

/** The producing end of a queue: connects to a bridge's `in` (or a bound PULL). */
export class QueueSender {
  private readonly sock = new zmq.Push({ linger: 2_000, sendHighWaterMark: 10_000 });
  private chain: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(readonly address: string) {
    this.sock.connect(address);
  }

  /**
   * Sends one message. Sends are serialized (zeromq.js allows one pending send per socket);
   * the promise resolves once the message is queued in libzmq.
   */
  send(value: unknown): Promise<void> {
    const frame = encode(value);
    const next = this.chain.then(() => (this.closed ? undefined : this.sock.send(frame)));
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** Waits for queued sends, then closes (linger lets libzmq flush what it holds). */
  async close(): Promise<void> {
    await this.chain;
    this.closed = true;
    this.sock.close();
  }
}

/** The consuming end of a queue: connects to a bridge's `out`. */
export class QueueReceiver {
  private readonly sock = new zmq.Pull({ linger: 0, receiveHighWaterMark: 10_000 });

  constructor(readonly address: string) {
    this.sock.connect(address);
  }

  /** Yields decoded messages (or the decode error, so the caller can report it) until closed. */
  async *messages(): AsyncGenerator<{ ok: true; value: unknown } | { ok: false; error: Error }> {
    try {
      for await (const [frame] of this.sock) {
        if (frame === undefined) continue;
        try {
          yield { ok: true, value: decode(frame) };
        } catch (e) {
          yield { ok: false, error: e instanceof Error ? e : new Error(String(e)) };
        }
      }
    } catch (e) {
      if ((e as { code?: string }).code !== 'EAGAIN' && !this.sock.closed) throw e;
    }
  }

  close(): void {
    this.sock.close();
  }
}
