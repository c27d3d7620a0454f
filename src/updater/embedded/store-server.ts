import * as zmq from 'zeromq';
import { MAX_MESSAGE_BYTES } from '../../transport/frames';
import type { StoreReply, StoreRequest } from '../../generated';
import { coerceError, errorMeta, TransportError, ValidationError } from '../../errors';
import type { Logger } from '../../lib/logger';
import { parseStoreRequest } from '../../lib/validate';
import { decode, encode } from '../../transport/codec';
import type { StateStore } from '../state-store';
import { BadMessages } from '../../lib/bad-messages';

export interface StoreServerOptions {
  /** Where to bind; defaults to an ephemeral loopback tcp port (see `endpoint`). */
  address?: string;
  logger: Logger;
}

/**
 * Serves a StateStore to UpdateWorkers over a ROUTER socket: one StoreRequest per message,
 * one StoreReply per request, sent only once the append is durable. Requests are handled
 * concurrently so that appends arriving together share one write+fsync (group commit).
 */
export class StoreServer {
  private readonly inFlight = new Set<Promise<void>>();
  /** Appends under way by batch id. */
  private readonly appending = new Map<string, Promise<StoreReply>>();
  private sendChain: Promise<void> = Promise.resolve();
  private closing: Promise<void> | undefined;
  private readonly receiving: Promise<void>;

  private constructor(
    private readonly sock: zmq.Router,
    readonly endpoint: string,
    private readonly store: StateStore,
    private readonly log: Logger,
  ) {
    this.bad = new BadMessages(log);
    this.receiving = this.receive();
  }

  /** Counts the requests this server refuses and logs them at a bounded rate. */
  private readonly bad: BadMessages;

  static async start(store: StateStore, opts: StoreServerOptions): Promise<StoreServer> {
    const address = opts.address ?? 'tcp://127.0.0.1:0';
    // Linger lets the last replies leave after close(); a worker re-sends what it missed.
    const sock = new zmq.Router({ linger: 1_000, maxMessageSize: MAX_MESSAGE_BYTES });
    try {
      await sock.bind(address);
    } catch (e) {
      sock.close();
      throw new TransportError(`store server cannot bind ${address}: ${coerceError(e).message}`, {
        cause: e,
      });
    }
    const endpoint = sock.lastEndpoint ?? address;
    const log = opts.logger.child({ component: 'store-server', endpoint });
    log.info('store server listening');
    return new StoreServer(sock, endpoint, store, log);
  }

  /**
   * Stops taking requests, lets the appends under way finish and reply, then closes. Appends
   * a store holds because it cannot write end only when it gives them up: close it too.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
      await this.sendChain;
      this.sock.close();
      await this.receiving;
      this.log.info('store server closed');
    })();
    return this.closing;
  }

  private async receive(): Promise<void> {
    try {
      for await (const frames of this.sock) {
        // Requests that arrive while closing get no reply: their worker re-sends them.
        if (this.closing !== undefined) continue;
        // [identity, (REQ's empty delimiter), payload]: echo everything before the payload.
        const payload = frames[frames.length - 1];
        if (frames.length < 2 || payload === undefined) continue;
        const envelope = frames.slice(0, -1);
        const task = this.handle(payload)
          .then((reply) => this.reply(envelope, reply))
          .catch((e: unknown) => this.log.error('store request failed', errorMeta(e)));
        this.inFlight.add(task);
        void task.then(() => this.inFlight.delete(task));
      }
    } catch (e) {
      if (!this.sock.closed) this.log.error('store server stopped receiving', errorMeta(e));
    }
  }

  /** Never throws: every outcome, bad input and failed appends included, becomes a reply. */
  private async handle(payload: Buffer): Promise<StoreReply> {
    let value: unknown;
    try {
      value = decode(payload);
    } catch (e) {
      return this.invalid('', `invalid StoreRequest: not msgpack (${coerceError(e).message})`, [
        { path: '/', message: 'must be a msgpack-encoded StoreRequest' },
      ]);
    }
    let request: StoreRequest;
    try {
      request = parseStoreRequest(value);
    } catch (e) {
      const issues = e instanceof ValidationError ? e.issues : [];
      return this.invalid(batchOf(value), coerceError(e).message, issues);
    }
    // A worker re-sends a batch whose ack is late (a store that cannot write holds it): the
    // re-send waits for the same append rather than holding the batch twice.
    let appending = this.appending.get(request.batch);
    if (appending === undefined) {
      appending = this.append(request);
      this.appending.set(request.batch, appending);
      const batch = request.batch;
      void appending.finally(() => this.appending.delete(batch));
    }
    return appending;
  }

  private async append(request: StoreRequest): Promise<StoreReply> {
    try {
      const accepted = await this.store.append(request.notifications);
      this.log.debug('batch appended', { batch: request.batch, accepted });
      return { batch: request.batch, ok: true, accepted };
    } catch (e) {
      const err = coerceError(e);
      const code = (err as { code?: unknown }).code;
      // The store reports its own condition (a full disk) once; each batch it refuses is routine.
      const level = code === 'E_STORE_UNWRITABLE' ? 'warn' : 'error';
      this.log[level]('append failed', { batch: request.batch, ...errorMeta(err) });
      return {
        batch: request.batch,
        ok: false,
        error: { code: typeof code === 'string' ? code : 'E_INTERNAL', message: err.message },
      };
    }
  }

  private invalid(batch: string, message: string, issues: ValidationError['issues']): StoreReply {
    this.bad.report('invalid store request', { batch, message, issues });
    return { batch, ok: false, error: { code: 'E_VALIDATION', message, issues } };
  }

  /** zeromq.js allows one pending send per socket, so replies go out one after another. */
  private reply(envelope: Buffer[], reply: StoreReply): Promise<void> {
    const frame = encode(reply);
    this.sendChain = this.sendChain
      .then(() => this.sock.send([...envelope, frame]))
      .catch((e: unknown) =>
        this.log.warn('store reply not sent', { batch: reply.batch, ...errorMeta(e) }),
      );
    return this.sendChain;
  }
}

/** The batch id of a request that failed validation, if it has a usable one. */
function batchOf(value: unknown): string {
  if (typeof value !== 'object' || value === null) return '';
  const batch = (value as { batch?: unknown }).batch;
  return typeof batch === 'string' ? batch : '';
}
