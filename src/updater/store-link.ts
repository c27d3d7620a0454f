import * as zmq from 'zeromq';
import type { Notification, StoreReply, StoreRequest } from '../generated';
import { coerceError, errorMeta } from '../errors';
import type { Logger } from '../lib/logger';
import { parseStoreReply } from '../lib/validate';
import { decode, encode } from '../transport/codec';
import { clientOptions, type ClientSecurity } from '../transport/curve';
import { MAX_MESSAGE_BYTES, moveConnection } from '../transport/frames';
import { toTuples } from './notification-codec';
import type { StateStore } from './state-store';

/**
 * How an UpdateWorker reaches the store: sends batches and hears one reply per batch sent
 * (through the `onReply` it was made with). A batch is kept until `forget`, for `resend`.
 */
export interface StoreLink {
  send(request: StoreRequest): void;
  /** Sends a batch again (its ack is late); a link may join it to an append still under way. */
  resend(batch: string): void;
  /** The batch was acknowledged or given up. */
  forget(batch: string): void;
  /** Stops; replies that come later are dropped. */
  close(): Promise<void>;
  /** Connects to the store at `address` instead (a resumed client that listens elsewhere). */
  move?(address: string): void;
}

/** A StoreServer over ZeroMQ (a DEALER): the store of another process, or behind CURVE. */
export class ZmqStoreLink implements StoreLink {
  private readonly dealer: zmq.Dealer;
  private readonly frames = new Map<string, Buffer>();
  private sendChain: Promise<void> = Promise.resolve();
  private readonly listening: Promise<void>;
  private at: string;

  constructor(
    address: string,
    security: ClientSecurity | undefined,
    private readonly onReply: (reply: StoreReply) => void,
    private readonly log: Logger,
  ) {
    this.dealer = new zmq.Dealer({
      linger: 0,
      maxMessageSize: MAX_MESSAGE_BYTES,
      ...clientOptions(security),
    });
    this.dealer.connect(address);
    this.at = address;
    this.listening = this.listen();
  }

  /** Batches not acknowledged are sent again by the worker's ack timer, to the new store. */
  move(address: string): void {
    this.at = moveConnection(this.dealer, this.at, address);
  }

  send(request: StoreRequest): void {
    // the notifications as tuples (notification-codec.ts): the StoreServer turns them back
    const frame = encode({ ...request, notifications: toTuples(request.notifications) });
    this.frames.set(request.batch, frame);
    this.transmit(frame);
  }

  resend(batch: string): void {
    const frame = this.frames.get(batch);
    if (frame !== undefined) this.transmit(frame);
  }

  forget(batch: string): void {
    this.frames.delete(batch);
  }

  async close(): Promise<void> {
    this.dealer.close();
    await this.listening;
  }

  /** zeromq.js allows one pending send per socket; a failed send is covered by the re-send. */
  private transmit(frame: Buffer): void {
    this.sendChain = this.sendChain
      .then(() => this.dealer.send(frame))
      .catch((e: unknown) => {
        if (!this.dealer.closed) this.log.warn('store request not sent', errorMeta(e));
      });
  }

  private async listen(): Promise<void> {
    try {
      for await (const [frame] of this.dealer) {
        if (frame === undefined) continue;
        let reply: StoreReply;
        try {
          reply = parseStoreReply(decode(frame));
        } catch (e) {
          this.log.warn('invalid store reply', { error: coerceError(e).message });
          continue;
        }
        this.onReply(reply);
      }
    } catch (e) {
      if (!this.dealer.closed) this.log.error('update worker stopped listening', errorMeta(e));
    }
  }
}

/**
 * The store of this process, appended to directly: what its own components notify (the
 * client's TaskManager and ManagerPipeline) never leaves the process, so it is not encoded,
 * sent, decoded and validated once more on its way (the StoreServer's work for other
 * processes). The reply is the append's outcome; an append under way is not made twice.
 */
export class LocalStoreLink implements StoreLink {
  private readonly batches = new Map<string, { notifications: Notification[]; busy: boolean }>();
  private closed = false;

  constructor(
    private readonly store: StateStore,
    private readonly onReply: (reply: StoreReply) => void,
  ) {}

  send(request: StoreRequest): void {
    this.batches.set(request.batch, { notifications: request.notifications, busy: false });
    this.append(request.batch);
  }

  resend(batch: string): void {
    this.append(batch);
  }

  forget(batch: string): void {
    this.batches.delete(batch);
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }

  private append(batch: string): void {
    const b = this.batches.get(batch);
    if (b === undefined || b.busy || this.closed) return;
    b.busy = true;
    this.store.append(b.notifications).then(
      (accepted) => this.reply(b, { batch, ok: true, accepted }),
      (e: unknown) => {
        const err = coerceError(e);
        const code = (err as { code?: unknown }).code;
        const error = {
          code: typeof code === 'string' ? code : 'E_INTERNAL',
          message: err.message,
        };
        this.reply(b, { batch, ok: false, error });
      },
    );
  }

  private reply(b: { busy: boolean }, reply: StoreReply): void {
    b.busy = false;
    if (!this.closed) this.onReply(reply);
  }
}
