import * as zmq from 'zeromq';
import { bindWhenFree } from './bind-when-free';
import { encode } from './codec';
import { clientOptions, serverOptions, type ClientSecurity, type ServerSecurity } from './curve';
import {
  MAX_MESSAGE_BYTES,
  SerialSender,
  decodedMessages,
  moveConnection,
  type Decoded,
} from './frames';
import { SendGap } from './send-gap';

/** Most items one queue message carries (see PushEnd.send). */
export const MAX_MESSAGE_ITEMS = 1_000;

/** Messages a queue's socket holds per peer before a send waits. */
const HIGH_WATER_MARK = 10_000;

/** How long a producer's close may take to flush what it queued to a live consumer. */
const FLUSH_MS = 2_000;

/** The producing end of a queue: one PUSH socket, bulks split to fit (see send). */
export abstract class PushEnd {
  private gap: SendGap | undefined;
  private oversize: ((item: unknown, bytes: number) => void) | undefined;

  protected constructor(protected readonly out: SerialSender) {}

  /**
   * Spaces this queue's messages at least `gapMs` apart while it is busy (`busy`: see SendGap),
   * up to `maxGapMs` while bulks keep gathering.
   */
  spaceBy(gapMs: number, maxGapMs = gapMs, busy?: (sending: number) => boolean): this {
    this.gap =
      gapMs > 0
        ? new SendGap(gapMs, (items) => this.sendBulk(items), {
            maxGapMs,
            ...(busy === undefined ? {} : { busy }),
          })
        : undefined;
    return this;
  }

  /**
   * Hands an item of a bulk whose encoding alone is over MAX_MESSAGE_BYTES (no peer would take
   * it) to `fn` instead of failing the send: the caller ends what it carried, saying why. The
   * rest of the bulk goes on.
   */
  onOversize(fn: (item: unknown, bytes: number) => void): this {
    this.oversize = fn;
    return this;
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
    return this.gap === undefined ? this.sendBulk(value) : this.gap.send(value);
  }

  private sendBulk(value: unknown[]): Promise<void> {
    let last: Promise<void> = Promise.resolve();
    for (let i = 0; i < value.length || i === 0; i += MAX_MESSAGE_ITEMS) {
      last = this.sendFitting(value.slice(i, i + MAX_MESSAGE_ITEMS));
    }
    return last;
  }

  abstract close(): Promise<void>;

  /** Sends what a gap holds back, before a close. */
  protected flushGap(): void {
    void this.gap?.flush().catch(() => undefined); // each held send reports its own failure
  }

  /** Drops what a gap holds back (a discard). */
  protected dropGap(): void {
    this.gap?.drop();
  }

  private sendFitting(items: unknown[]): Promise<void> {
    const frame = encode(items);
    if (frame.length > MAX_MESSAGE_BYTES && items.length === 1 && this.oversize !== undefined) {
      this.oversize(items[0], frame.length);
      return Promise.resolve();
    }
    if (frame.length <= MAX_MESSAGE_BYTES || items.length < 2) return this.out.sendFrame(frame);
    const half = Math.ceil(items.length / 2);
    void this.sendFitting(items.slice(0, half)).catch(() => undefined); // the last one reports
    return this.sendFitting(items.slice(half));
  }
}

/** The producing end of a queue that connects: to a bridge's `in`, or a BoundQueueReceiver. */
export class QueueSender extends PushEnd {
  private at: string;
  private readonly sock: zmq.Push;

  /** `security`: this peer's keys where the other end is a CURVE server (another process's). */
  constructor(address: string, security?: ClientSecurity) {
    const sock = connected(pushSocket(FLUSH_MS, clientOptions(security)), address);
    super(new SerialSender(sock));
    this.sock = sock;
    this.at = address;
  }

  get address(): string {
    return this.at;
  }

  /**
   * Connects to `address` instead (see moveConnection): what was queued for the old address
   * and never sent is lost, a send still waiting for room goes to the new one.
   */
  move(address: string): void {
    this.at = moveConnection(this.sock, this.at, address);
  }

  close(): Promise<void> {
    this.flushGap();
    return this.out.close();
  }
}

/**
 * The producing end of a queue with a single consumer in another process, which connects to
 * it: binds `address` itself, so no bridge hop (the client's PUSH to a pilot's agent, a CURVE
 * server admitting that pilot's key alone). A PUSH with no peer holds a send until one
 * connects: what is sent before the consumer connects, or while it reconnects, waits for it in
 * order; what was queued to a consumer whose connection ends goes with that connection.
 */
export class BoundQueueSender extends PushEnd {
  private constructor(
    readonly address: string,
    private readonly sock: zmq.Push,
  ) {
    super(new SerialSender(sock));
  }

  /** `security`: this socket's CurveZMQ server keys and the ZAP domain it admits. */
  static async listen(address: string, security?: ServerSecurity): Promise<BoundQueueSender> {
    const sock = await bound(pushSocket(FLUSH_MS, serverOptions(security)), address);
    return new BoundQueueSender(sock.lastEndpoint ?? address, sock);
  }

  /**
   * Flushes what was sent to a live consumer, waiting at most FLUSH_MS for sends that have no
   * consumer to go to (it is gone), which are then dropped.
   */
  close(): Promise<void> {
    this.flushGap();
    return this.out.close(FLUSH_MS);
  }

  /** Closes at once: what the consumer has not taken yet is dropped. */
  discard(): Promise<void> {
    this.dropGap();
    this.sock.linger = 0;
    return this.out.close(0);
  }
}

/** The consuming end of a queue: one PULL socket, its messages decoded. */
export abstract class PullEnd {
  protected constructor(protected readonly sock: zmq.Pull) {}

  messages(): AsyncGenerator<Decoded> {
    return decodedMessages(this.sock);
  }

  close(): void {
    if (!this.sock.closed) this.sock.close();
  }
}

/** The consuming end of a queue that connects: to a bridge's `out`, or a BoundQueueSender. */
export class QueueReceiver extends PullEnd {
  private at: string;

  constructor(address: string, security?: ClientSecurity) {
    super(connected(pullSocket(clientOptions(security)), address));
    this.at = address;
  }

  get address(): string {
    return this.at;
  }

  /** Pulls from `address` instead (see moveConnection). */
  move(address: string): void {
    this.at = moveConnection(this.sock, this.at, address);
  }
}

/**
 * The consuming end of a queue with a single producer in another process, which connects to
 * it: binds `address` itself, so no bridge hop (the client's PULL for a pilot's hand-backs).
 */
export class BoundQueueReceiver extends PullEnd {
  private constructor(
    readonly address: string,
    sock: zmq.Pull,
  ) {
    super(sock);
  }

  /** `security`: this socket's CurveZMQ server keys and the ZAP domain it admits. */
  static async listen(address: string, security?: ServerSecurity): Promise<BoundQueueReceiver> {
    const sock = await bound(pullSocket(serverOptions(security)), address);
    return new BoundQueueReceiver(sock.lastEndpoint ?? address, sock);
  }
}

type Options = Partial<zmq.SocketOptions<zmq.Socket>>;

function pushSocket(linger: number, security: Options): zmq.Push {
  return new zmq.Push({
    linger,
    sendHighWaterMark: HIGH_WATER_MARK,
    maxMessageSize: MAX_MESSAGE_BYTES,
    ...security,
  });
}

function pullSocket(security: Options): zmq.Pull {
  return new zmq.Pull({
    linger: 0,
    receiveHighWaterMark: HIGH_WATER_MARK,
    maxMessageSize: MAX_MESSAGE_BYTES,
    ...security,
  });
}

function connected<S extends zmq.Socket>(sock: S, address: string): S {
  sock.connect(address);
  return sock;
}

/** Binds `sock`, closing it if the address cannot be had (a resumed session's port taken). */
/**
 * How long a queue's bind waits for its address: bound again right after a discard, the old
 * socket lets it go within milliseconds; one that a live socket holds is refused soon.
 */
const REBIND_WITHIN_MS = 1_000;

async function bound<S extends zmq.Socket>(sock: S, address: string): Promise<S> {
  await bindWhenFree(sock, address, REBIND_WITHIN_MS);
  return sock;
}
