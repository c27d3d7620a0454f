import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Notification } from '../../../src/generated';
import { deferred, withTimeout } from '../../../src/lib/deferred';
import type { Logger } from '../../../src/lib/logger';
import { Bridge } from '../../../src/transport/bridge';
import { QueueSender } from '../../../src/transport/queue';
import {
  EmbeddedStore,
  StoreServer,
  UpdateWorker,
  type StateStore,
  type UpdateWorkerOptions,
  type WatchBulk,
} from '../../../src/updater';

/** The session the UpdatePath's server and workers name. */
export const UPDATE_PATH_SESSION = 'update-path';

const STATES: Notification['state'][] = [
  'NEW',
  'TMGR_SCHEDULING_PENDING',
  'TMGR_SCHEDULING',
  'AGENT_EXECUTING_PENDING',
  'AGENT_EXECUTING',
  'DONE',
];

/** `count` distinct notifications (distinct idempotence keys), deterministic. */
export function makeNotes(count: number, prefix = 'task'): Notification[] {
  const tasks = Math.ceil(count / STATES.length);
  return Array.from({ length: count }, (_, i) => ({
    kind: 'task' as const,
    uid: `${prefix}.${String(i % tasks).padStart(6, '0')}`,
    attempt: 1,
    state: STATES[Math.floor(i / tasks)] ?? 'DONE',
    ts: 1_700_000_000_000 + i,
    component: 'test',
  }));
}

/** Seeded PRNG, so the offsets a test picks are the same every run. */
export { mulberry32 as prng } from '../../../src/lib/prng';

/** Follows `store` from cursor 0 until it holds at least `n` notifications. */
export async function waitForCount(store: StateStore, n: number, ms: number): Promise<number> {
  const it = store.watch(0)[Symbol.asyncIterator]();
  const follow = async (): Promise<number> => {
    let seen = 0;
    while (seen < n) {
      const r: IteratorResult<WatchBulk> = await it.next();
      if (r.done === true) throw new Error(`watch ended at ${seen} of ${n}`);
      seen = r.value.cursor + r.value.notifications.length;
    }
    return seen;
  };
  try {
    return await withTimeout(follow(), ms, `store holding ${n} notifications`);
  } finally {
    await it.return?.();
  }
}

export interface LogEntry {
  level: 'error' | 'warn' | 'info' | 'debug';
  message: string;
  meta: Record<string, unknown>;
}

/** A Logger that records entries and lets a test wait for one (graphile's EventMonitor idea). */
export class RecordingLogger implements Logger {
  readonly entries: LogEntry[] = [];
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly base: Record<string, unknown> = {},
    private readonly root?: RecordingLogger,
  ) {}

  error(message: string, meta?: Record<string, unknown>): void {
    this.record('error', message, meta);
  }
  warn(message: string, meta?: Record<string, unknown>): void {
    this.record('warn', message, meta);
  }
  info(message: string, meta?: Record<string, unknown>): void {
    this.record('info', message, meta);
  }
  debug(message: string, meta?: Record<string, unknown>): void {
    this.record('debug', message, meta);
  }
  child(meta: Record<string, unknown>): Logger {
    return new RecordingLogger({ ...this.base, ...meta }, this.root ?? this);
  }

  /** Resolves once `holds(entries)` is true, rejects after `ms`. */
  async waitFor(holds: (entries: LogEntry[]) => boolean, ms: number, what: string): Promise<void> {
    const root = this.root ?? this;
    if (holds(root.entries)) return;
    const d = deferred<void>();
    const check = (): void => {
      if (holds(root.entries)) d.resolve();
    };
    root.listeners.add(check);
    try {
      await withTimeout(d.promise, ms, what);
    } finally {
      root.listeners.delete(check);
    }
  }

  private record(level: LogEntry['level'], message: string, meta?: Record<string, unknown>): void {
    const root = this.root ?? this;
    root.entries.push({ level, message, meta: { ...this.base, ...meta } });
    for (const l of [...root.listeners]) l();
  }
}

/** A store that hands every call to another: tests override what they watch or hold back. */
export class ForwardingStore implements StateStore {
  constructor(protected readonly inner: StateStore) {}

  append(batch: Notification[]): Promise<number> {
    return this.inner.append(batch);
  }
  watch(fromCursor?: number): AsyncIterable<WatchBulk> {
    return this.inner.watch(fromCursor);
  }
  history(uid?: string): Promise<Notification[]> {
    return this.inner.history(uid);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

/** Wraps a store and tells a test when appends (as the server asked for them) completed. */
export class ObservedStore extends ForwardingStore {
  readonly appended: { batch: Notification[]; accepted: number }[] = [];
  private readonly listeners = new Set<() => void>();

  override async append(batch: Notification[]): Promise<number> {
    const accepted = await this.inner.append(batch);
    this.appended.push({ batch, accepted });
    for (const l of [...this.listeners]) l();
    return accepted;
  }

  /** Resolves once `holds()` is true after some completed append, rejects after `ms`. */
  async until(holds: () => boolean, ms: number, what: string): Promise<void> {
    if (holds()) return;
    const d = deferred<void>();
    const check = (): void => {
      if (holds()) d.resolve();
    };
    this.listeners.add(check);
    try {
      await withTimeout(d.promise, ms, what);
    } finally {
      this.listeners.delete(check);
    }
  }
}

/**
 * A real update path: a queue bridge notifications are pushed into, an embedded store in a
 * temp dir behind its server, and the UpdateWorkers `start` adds between the two.
 */
export class UpdatePath {
  readonly workers: UpdateWorker[] = [];

  private constructor(
    readonly dir: string,
    readonly bridge: Bridge,
    readonly store: EmbeddedStore,
    private current: StoreServer,
    readonly sender: QueueSender,
    private readonly logger: Logger,
    private readonly served: StateStore,
  ) {}

  get server(): StoreServer {
    return this.current;
  }

  /** A store that went away (its client died) comes back at the same address. */
  async restartServer(): Promise<StoreServer> {
    const address = this.current.endpoint;
    await this.current.close();
    this.current = await StoreServer.start(this.served, {
      address,
      session: UPDATE_PATH_SESSION,
      logger: this.logger,
    });
    return this.current;
  }

  /** `serve`: what the server writes to (the store, or a wrapper around it). */
  static async open(
    prefix: string,
    logger: Logger,
    serve: (store: EmbeddedStore) => StateStore = (s) => s,
  ): Promise<UpdatePath> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    const bridge = await Bridge.queue();
    const store = await EmbeddedStore.open(dir);
    const served = serve(store);
    const server = await StoreServer.start(served, { session: UPDATE_PATH_SESSION, logger });
    const sender = new QueueSender(bridge.endpoints.in);
    return new UpdatePath(dir, bridge, store, server, sender, logger, served);
  }

  /** Starts `n` more workers (named uw0, uw1, ... from the first) and returns them all. */
  start(n: number, opts: Partial<UpdateWorkerOptions> = {}): UpdateWorker[] {
    for (let i = 0; i < n; i++) {
      this.workers.push(
        UpdateWorker.start({
          updatesAddress: this.bridge.endpoints.out,
          storeAddress: this.server.endpoint,
          session: UPDATE_PATH_SESSION,
          logger: this.logger,
          name: `uw${i}`,
          ...opts,
        }),
      );
    }
    return this.workers;
  }

  async close(): Promise<void> {
    await this.sender.close();
    await Promise.all(this.workers.map((w) => w.close()));
    await this.current.close();
    await this.store.close();
    await this.bridge.close();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
