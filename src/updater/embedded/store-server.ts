import * as zmq from 'zeromq';
import { MAX_MESSAGE_BYTES } from '../../transport/frames';
import type { Notification, StoreReply, StoreRequest } from '../../generated';
import { coerceError, errorMeta, TransportError, ValidationError } from '../../errors';
import type { Logger } from '../../lib/logger';
import { parseStoreRequest } from '../../lib/validate';
import { decode, encode } from '../../transport/codec';
import { fromTuples } from '../notification-codec';
import type { StateStore } from '../state-store';
import { BadMessages } from '../../lib/bad-messages';
import { serverOptions, type ServerSecurity } from '../../transport/curve';

export interface StoreServerOptions {
  /** Where to bind; defaults to an ephemeral loopback tcp port (see `endpoint`). */
  address?: string;
  /** The session every request must name. */
  session: string;
  logger: Logger;
}

/** Which notifications a pilot's agent may write: those about the pilot and its own tasks. */
export type PilotScope = (kind: Notification['kind'], uid: string, attempt: number) => boolean;

/**
 * Serves a StateStore to UpdateWorkers over a ROUTER socket: one StoreRequest per message,
 * one StoreReply per request, sent only once the append is durable. Requests are handled
 * concurrently so that appends arriving together share one write+fsync (group commit).
 */
export class StoreServer {
  private readonly inFlight = new Set<Promise<void>>();
  /** Appends under way by batch id. */
  private readonly appending = new Map<string, Promise<StoreReply>>();
  private closing: Promise<void> | undefined;
  /** The socket the client's own workers use, then one per pilot (see `listen`). */
  private readonly sockets: {
    sock: zmq.Router;
    receiving: Promise<void>;
    sendChain: Promise<void>;
  }[] = [];
  private refusedCount = 0;

  private constructor(
    sock: zmq.Router,
    readonly endpoint: string,
    private readonly store: StateStore,
    private readonly session: string,
    private readonly log: Logger,
  ) {
    this.bad = new BadMessages(log);
    this.serve(sock, undefined);
  }

  /** Notifications and requests refused so far (another session, another pilot's tasks). */
  get refused(): number {
    return this.refusedCount;
  }

  /**
   * Binds a socket for one pilot's UpdateWorkers at `address` (its old one on resume), admitted
   * by the pilot's key alone; requests on it must name the pilot, and notifications outside
   * `scope` are refused and counted. Returns where it listens.
   */
  async listen(
    pilot: string,
    address: string,
    security: ServerSecurity | undefined,
    scope: PilotScope,
  ): Promise<string> {
    const sock = new zmq.Router({
      linger: 1_000,
      maxMessageSize: MAX_MESSAGE_BYTES,
      ...serverOptions(security),
    });
    await bindOrThrow(sock, address);
    this.serve(sock, { pilot, scope });
    return sock.lastEndpoint ?? address;
  }

  private serve(sock: zmq.Router, from: { pilot: string; scope: PilotScope } | undefined): void {
    const entry = { sock, receiving: Promise.resolve(), sendChain: Promise.resolve() };
    entry.receiving = this.receive(entry, from);
    this.sockets.push(entry);
  }

  /** Counts the requests this server refuses and logs them at a bounded rate. */
  private readonly bad: BadMessages;

  static async start(store: StateStore, opts: StoreServerOptions): Promise<StoreServer> {
    const address = opts.address ?? 'tcp://127.0.0.1:0';
    // Linger lets the last replies leave after close(); a worker re-sends what it missed.
    const sock = new zmq.Router({ linger: 1_000, maxMessageSize: MAX_MESSAGE_BYTES });
    await bindOrThrow(sock, address);
    const endpoint = sock.lastEndpoint ?? address;
    const log = opts.logger.child({ component: 'store-server', endpoint });
    log.info('store server listening');
    return new StoreServer(sock, endpoint, store, opts.session, log);
  }

  /**
   * Stops taking requests, lets the appends under way finish and reply, then closes. Appends
   * a store holds because it cannot write end only when it gives them up: close it too.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
      await Promise.all(this.sockets.map((s) => s.sendChain));
      for (const s of this.sockets) s.sock.close();
      await Promise.all(this.sockets.map((s) => s.receiving));
      this.log.info('store server closed');
    })();
    return this.closing;
  }

  private async receive(
    entry: { sock: zmq.Router; sendChain: Promise<void> },
    from: { pilot: string; scope: PilotScope } | undefined,
  ): Promise<void> {
    const sock = entry.sock;
    try {
      for await (const frames of sock) {
        // Requests that arrive while closing get no reply: their worker re-sends them.
        if (this.closing !== undefined) continue;
        // [identity, (REQ's empty delimiter), payload]: echo everything before the payload.
        const payload = frames[frames.length - 1];
        if (frames.length < 2 || payload === undefined) continue;
        const envelope = frames.slice(0, -1);
        const task = this.handle(payload, from)
          .then((reply) => this.reply(entry, envelope, reply))
          .catch((e: unknown) => this.log.error('store request failed', errorMeta(e)));
        this.inFlight.add(task);
        void task.then(() => this.inFlight.delete(task));
      }
    } catch (e) {
      if (!sock.closed) this.log.error('store server stopped receiving', errorMeta(e));
    }
  }

  /** Never throws: every outcome, bad input and failed appends included, becomes a reply. */
  private async handle(
    payload: Buffer,
    from: { pilot: string; scope: PilotScope } | undefined,
  ): Promise<StoreReply> {
    let value: unknown;
    try {
      value = decode(payload);
    } catch (e) {
      return this.invalid('', `invalid StoreRequest: not msgpack (${coerceError(e).message})`, [
        { path: '/', message: 'must be a msgpack-encoded StoreRequest' },
      ]);
    }
    // UpdateWorkers send notifications as tuples (notification-codec.ts); checked as objects
    const sent = (value as { notifications?: unknown } | null)?.notifications;
    if (Array.isArray(sent)) fromTuples(sent);
    let request: StoreRequest;
    try {
      request = parseStoreRequest(value);
    } catch (e) {
      const issues = e instanceof ValidationError ? e.issues : [];
      return this.invalid(batchOf(value), coerceError(e).message, issues);
    }
    const refused = this.refusal(request, from);
    if (refused !== undefined) return refused;
    // A worker re-sends a batch whose ack is late (a store that cannot write holds it): the
    // re-send waits for the same append rather than holding the batch twice.
    let appending = this.appending.get(request.batch);
    if (appending === undefined) {
      const notifications =
        from === undefined ? request.notifications : this.inScope(request, from.pilot, from.scope);
      appending = this.append(request.batch, notifications);
      this.appending.set(request.batch, appending);
      const batch = request.batch;
      void appending.finally(() => this.appending.delete(batch));
    }
    return appending;
  }

  private async append(
    batch: string,
    notifications: StoreRequest['notifications'],
  ): Promise<StoreReply> {
    try {
      const accepted = await this.store.append(notifications);
      this.log.debug('batch appended', { batch: batch, accepted });
      return { batch: batch, ok: true, accepted };
    } catch (e) {
      const err = coerceError(e);
      const code = (err as { code?: unknown }).code;
      // The store reports its own condition (a full disk) once; each batch it refuses is routine.
      const level = code === 'E_STORE_UNWRITABLE' ? 'warn' : 'error';
      this.log[level]('append failed', { batch: batch, ...errorMeta(err) });
      return {
        batch: batch,
        ok: false,
        error: { code: typeof code === 'string' ? code : 'E_INTERNAL', message: err.message },
      };
    }
  }

  /** A request naming another session, or on a pilot's socket another pilot, gets an error. */
  private refusal(
    request: StoreRequest,
    from: { pilot: string } | undefined,
  ): StoreReply | undefined {
    let problem: string | undefined;
    if (request.session !== this.session) problem = `names session '${request.session}'`;
    else if (from !== undefined && request.pilot !== from.pilot) {
      problem = `names pilot '${request.pilot}' on the socket of ${from.pilot}`;
    }
    if (problem === undefined) return undefined;
    this.refusedCount += request.notifications.length;
    this.bad.report('store request refused', { batch: request.batch, problem });
    return {
      batch: request.batch,
      ok: false,
      error: { code: 'E_REFUSED', message: `store request refused: it ${problem}` },
    };
  }

  /** A pilot's notifications about anything but itself and its tasks are refused and counted. */
  private inScope(
    request: StoreRequest,
    pilot: string,
    scope: PilotScope,
  ): StoreRequest['notifications'] {
    const kept = request.notifications.filter((n) => scope(n.kind, n.uid, n.attempt));
    const refused = request.notifications.length - kept.length;
    if (refused > 0) {
      this.refusedCount += refused;
      const first = request.notifications.find((n) => !scope(n.kind, n.uid, n.attempt))!;
      this.bad.report('notifications refused: not about the pilot or its tasks', {
        pilot,
        batch: request.batch,
        refused,
        first: { kind: first.kind, uid: first.uid, state: first.state },
      });
    }
    return kept;
  }

  private invalid(batch: string, message: string, issues: ValidationError['issues']): StoreReply {
    this.bad.report('invalid store request', { batch, message, issues });
    return { batch, ok: false, error: { code: 'E_VALIDATION', message, issues } };
  }

  /** zeromq.js allows one pending send per socket, so replies go out one after another. */
  private reply(
    entry: { sock: zmq.Router; sendChain: Promise<void> },
    envelope: Buffer[],
    reply: StoreReply,
  ): Promise<void> {
    const frame = encode(reply);
    entry.sendChain = entry.sendChain
      .then(() => entry.sock.send([...envelope, frame]))
      .catch((e: unknown) =>
        this.log.warn('store reply not sent', { batch: reply.batch, ...errorMeta(e) }),
      );
    return entry.sendChain;
  }
}

/** The batch id of a request that failed validation, if it has a usable one. */
function batchOf(value: unknown): string {
  if (typeof value !== 'object' || value === null) return '';
  const batch = (value as { batch?: unknown }).batch;
  return typeof batch === 'string' ? batch : '';
}

async function bindOrThrow(sock: zmq.Router, address: string): Promise<void> {
  try {
    await sock.bind(address);
  } catch (e) {
    sock.close();
    throw new TransportError(`store server cannot bind ${address}: ${coerceError(e).message}`, {
      cause: e,
    });
  }
}
