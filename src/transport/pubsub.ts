import * as zmq from 'zeromq';
import { decode, encode } from './codec';

/** Publishes on a pubsub bridge's `in`. Messages sent before the connection is up are lost. */
export class Publisher {
  private readonly sock = new zmq.Publisher({ linger: 1_000 });
  private chain: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(readonly address: string) {
    this.sock.connect(address);
  }

  publish(value: unknown): Promise<void> {
    const frame = encode(value);
    const next = this.chain.then(() => (this.closed ? undefined : this.sock.send(frame)));
    this.chain = next.catch(() => undefined);
    return next;
  }

  async close(): Promise<void> {
    await this.chain;
    this.closed = true;
    this.sock.close();
  }
}

/** Subscribes to everything on a pubsub bridge's `out`. */
export class Subscriber {
  private readonly sock = new zmq.Subscriber({ linger: 0 });

  constructor(readonly address: string) {
    this.sock.connect(address);
    this.sock.subscribe();
  }

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
      if (!this.sock.closed) throw e;
    }
  }

  close(): void {
    this.sock.close();
  }
}
