import * as zmq from 'zeromq';
import { encode } from './codec';
import { clientOptions, type ClientSecurity } from './curve';
import { MAX_MESSAGE_BYTES, SerialSender, decodedMessages, type Decoded } from './frames';

/** Most items one queue message carries (see QueueSender.send). */
export const MAX_MESSAGE_ITEMS = 1_000;

/** The producing end of a queue: connects to a bridge's `in`. */
export class QueueSender {
  private readonly out: SerialSender;

  /** `security`: this peer's keys where the bridge is a CURVE server (another process's). */
  constructor(
    readonly address: string,
    security?: ClientSecurity,
  ) {
    const sock = new zmq.Push({
      linger: 2_000,
      sendHighWaterMark: 10_000,
      maxMessageSize: MAX_MESSAGE_BYTES,
      ...clientOptions(security),
    });
    sock.connect(address);
    this.out = new SerialSender(sock);
  }

  /**
   * Sends `value`; an array longer than MAX_MESSAGE_ITEMS goes as several messages of at most
   * that many items, in order. A bulk is a list of independent items, and megabyte messages
   * (a submit of 100,000 tasks would be 50 MB) make every hop allocate and free blocks that
   * large, which the C allocator then keeps as fragmented, resident memory. A part whose
   * encoding is over MAX_MESSAGE_BYTES (large items) is halved until each part fits.
   */
  send(value: unknown): Promise<void> {
    if (!Array.isArray(value)) return this.out.send(value);
    let last: Promise<void> = Promise.resolve();
    for (let i = 0; i < value.length || i === 0; i += MAX_MESSAGE_ITEMS) {
      last = this.sendFitting(value.slice(i, i + MAX_MESSAGE_ITEMS));
    }
    return last;
  }

  private sendFitting(items: unknown[]): Promise<void> {
    const frame = encode(items);
    if (frame.length <= MAX_MESSAGE_BYTES || items.length < 2) return this.out.sendFrame(frame);
    const half = Math.ceil(items.length / 2);
    void this.sendFitting(items.slice(0, half)).catch(() => undefined); // the last one reports
    return this.sendFitting(items.slice(half));
  }

  close(): Promise<void> {
    return this.out.close();
  }
}

/** The consuming end of a queue: connects to a bridge's `out`. */
export class QueueReceiver {
  private readonly sock: zmq.Pull;

  constructor(
    readonly address: string,
    security?: ClientSecurity,
  ) {
    this.sock = new zmq.Pull({
      linger: 0,
      receiveHighWaterMark: 10_000,
      maxMessageSize: MAX_MESSAGE_BYTES,
      ...clientOptions(security),
    });
    this.sock.connect(address);
  }

  messages(): AsyncGenerator<Decoded> {
    return decodedMessages(this.sock);
  }

  close(): void {
    if (!this.sock.closed) this.sock.close();
  }
}
