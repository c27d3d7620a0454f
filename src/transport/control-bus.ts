import { randomUUID } from 'node:crypto';
import type { ControlMessage } from '../generated';
import { ValidationError, errorMeta } from '../errors';
import { withTimeout } from '../lib/deferred';
import type { Logger } from '../lib/logger';
import { parseControlMessage } from '../lib/validate';
import type { ClientSecurity } from './curve';
import type { Decoded } from './frames';
import { Publisher, Subscriber } from './pubsub';
import { BadMessages } from '../lib/bad-messages';

type Listener = (msg: ControlMessage) => void;

type WithoutSession<T> = T extends unknown ? Omit<T, 'session'> : never;
/** What a caller publishes: the bus stamps its own session on everything but probes. */
export type OutgoingControl = WithoutSession<Exclude<ControlMessage, { type: 'probe' }>>;

/**
 * A process's view of the session's control pubsub: one publisher, one subscriber, validated
 * messages dispatched to listeners. `ready()` publishes probes until one comes back, proving
 * both directions through the forwarder, so later messages are not lost to slow joining.
 * Messages of another session are dropped: an orphaned agent of a dead session may reconnect to
 * ports that our session now binds, and pilot and task uids repeat across sessions.
 */
export class ControlBus {
  /** Counts what this bus refuses and logs it at a bounded rate. */
  private readonly bad: BadMessages;
  private readonly pub: Publisher;
  private readonly sub: Subscriber;
  private readonly listeners = new Set<Listener>();
  private readonly probes = new Map<string, { resolve: () => void; reject: (e: Error) => void }>();
  private readonly loop: Promise<void>;

  private foreign = 0;

  constructor(
    addresses: { in: string; out: string },
    readonly session: string,
    private readonly log: Logger,
    /** An agent's keys: the client's control sockets are CURVE servers. */
    security?: ClientSecurity,
  ) {
    this.bad = new BadMessages(log);
    this.pub = new Publisher(addresses.in, security);
    this.sub = new Subscriber(addresses.out, security);
    this.loop = this.run();
  }

  on(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Connects to the session's control sockets at `addresses` instead: an agent whose client
   * listens elsewhere now (same keys: the session's key did not change).
   */
  move(addresses: { in: string; out: string }): void {
    this.pub.move(addresses.in);
    this.sub.move(addresses.out);
  }

  publish(msg: OutgoingControl): Promise<void> {
    return this.pub.publish({ ...msg, session: this.session });
  }

  async ready(timeoutMs = 10_000): Promise<void> {
    const nonce = randomUUID();
    const seen = new Promise<void>((resolve, reject) =>
      this.probes.set(nonce, { resolve, reject }),
    );
    const send = (): void => void this.pub.publish({ type: 'probe', from: 'self', nonce });
    send();
    const timer = setInterval(send, 20);
    try {
      await withTimeout(seen, timeoutMs, 'control bus probe');
    } finally {
      clearInterval(timer);
      this.probes.delete(nonce);
    }
  }

  /** Closes the sockets; a `ready()` still waiting rejects at once instead of at its timeout. */
  async close(): Promise<void> {
    for (const probe of this.probes.values()) probe.reject(new Error('control bus closed'));
    this.probes.clear();
    await this.pub.close();
    this.sub.close();
    await this.loop;
  }

  /**
   * Hands a checked message of this session to the listeners: what this bus receives, and
   * what the client's per-pilot uplinks receive (ControlUplinks).
   */
  deliver(msg: Exclude<ControlMessage, { type: 'probe' }>): void {
    for (const l of this.listeners) {
      try {
        l(msg);
      } catch (e) {
        this.log.error('control listener failed', { ...errorMeta(e), type: msg.type });
      }
    }
  }

  /** Publishes another peer's probe, so that it sees its own come back (ControlUplinks). */
  echo(probe: Extract<ControlMessage, { type: 'probe' }>): Promise<void> {
    return this.pub.publish(probe);
  }

  private async run(): Promise<void> {
    try {
      for await (const m of this.sub.messages()) {
        const msg = controlMessageOf(m, 'rejected', {}, (kind, meta) =>
          this.bad.report(kind, meta),
        );
        if (msg === undefined) continue;
        if (msg.type === 'probe') {
          this.probes.get(msg.nonce)?.resolve();
          continue;
        }
        if (msg.session !== this.session) {
          if (this.foreign++ % 1_000 === 0) {
            this.log.warn('control messages of another session dropped', {
              type: msg.type,
              session: msg.session,
              dropped: this.foreign,
            });
          }
          continue;
        }
        this.deliver(msg);
      }
    } catch (e) {
      this.log.error('control bus stopped', errorMeta(e));
    }
  }
}

/**
 * The control message in a received frame, or undefined after `refuse` was told why not
 * ("undecodable control message <verb>", "invalid control message <verb>", with `meta`).
 */
export function controlMessageOf(
  m: Decoded,
  verb: string,
  meta: Record<string, unknown>,
  refuse: (kind: string, meta: Record<string, unknown>) => void,
): ControlMessage | undefined {
  if (!m.ok) {
    refuse(`undecodable control message ${verb}`, { ...meta, ...errorMeta(m.error) });
    return undefined;
  }
  try {
    return parseControlMessage(m.value);
  } catch (e) {
    const issues = e instanceof ValidationError ? e.issues : [];
    refuse(`invalid control message ${verb}`, { ...meta, issues });
    return undefined;
  }
}
