import { UsageError, errorMeta } from '../../errors';
import { systemClock, type Clock } from '../../lib/clock';
import { fileLogger } from '../../lib/log';
import type { Logger } from '../../lib/logger';
import { nativeMemory, nativeMemoryMissing } from '../../lib/native-memory';
import type { Reason } from '../../generated';
import { parseSessionOptions } from '../../lib/validate';
import type { Notification } from '../../states/notification';
import type { Bridge } from '../../transport/bridge';
import type { CoalescingSender } from '../../transport/coalescing-sender';
import type { ControlBus } from '../../transport/control-bus';
import type { ControlUplinks } from '../../transport/control-uplinks';
import { EmbeddedStore } from '../../updater/embedded/store';
import { StoreServer } from '../../updater/embedded/store-server';
import type { MongoStore } from '../../updater/mongodb/store';
import { openStore, type SessionStore, type StoreChoice } from '../../updater/store-choice';
import type { UpdateWorker } from '../../updater/update-worker';
import { DeliveredCounters, DeliveryCursor } from '../resume/delivered';
import { journaledKeys, type Journal, type JournalEntry } from '../resume/journal';
import { ManagerPipeline } from '../pipeline/manager-pipeline';
import { MemoryTrimmer } from './memory-trimmer';
import type { SessionOptions } from '../session-options';
import { teeLogger } from './tee-logger';
import { closeStore, StoreHealth, throughOutage } from '../store/health';
import type { FinalPilotState } from '../../states/pilot-model';
import { recoveryPlan } from '../pipeline/pilot-recovery';
import { givenInStore, PilotLinks, type PilotLink } from '../pilots/links';
import { ResumeAddresses } from '../resume/addresses';
import { SessionSecurity } from '../pilots/session-security';
import { sessionPlace } from './session-place';
import { ClientMirror, unknownTasks } from '../resume/mirror';
import { takeUndelivered } from '../resume/undelivered-intake';
import { clientWorkers } from '../store/update-workers';
import { TaskRegistry } from '../tasks/registry';
import { StoreFollower } from '../store/follower';
import { heartbeats, openSessionControl } from '../pilots/session-control';
import { toEveryAgent } from '../pipeline/service-gone';
import { published } from '../../components/shared/transition';

/** How often the session tells its agents it is alive (agents give up after 30 s by default). */
const HEARTBEAT_MS = 1_000;

type NotificationListener = (ns: Notification[]) => void;
type PilotEndedListener = (uid: string, state: FinalPilotState, reason?: Reason) => void;

/**
 * The client's counterpart of the agent: everything a session runs in the user's process (the
 * state store and its server, the control bus, the UpdateWorkers, the manager components and
 * their queues, the journal). The public Session, PilotManager and TaskManager are facades
 * over it (runtimeOf); users never see it.
 */
export class ClientRuntime {
  readonly clock: Clock = systemClock;
  private bridges: Bridge[] = [];
  private workers: UpdateWorker[] = [];
  private notes!: CoalescingSender<Notification>;
  /** The embedded store's server for this process's own socket (none with MongoDB). */
  private storeServer: StoreServer | undefined;
  private mirror: ClientMirror | undefined;
  /** Delivers the store's notifications to the managers. */
  private follower!: StoreFollower;
  private readonly pilotEnded = new Set<PilotEndedListener>();
  /** The session's tasks, across its TaskManagers. */
  readonly tasks = new TaskRegistry();
  private pilotCounter = 0;
  private readonly closers: (() => Promise<void>)[] = [];
  private closed = false;
  private heartbeat: NodeJS.Timeout | undefined;
  /** Gives memory back when the session goes quiet (undefined: the addon is not built). */
  private readonly trimmer: MemoryTrimmer | undefined;
  private managers = 0;
  private readonly managerKinds = new Map<string, number>();
  /** Journal entries of the session being resumed (empty for a new session). */
  readonly resumed: readonly JournalEntry[];
  journal!: Journal;
  delivered!: DeliveredCounters;
  control!: ControlBus;
  /** Each pilot's own sockets (see PilotLinks). */
  links!: PilotLinks;
  private uplinks: ControlUplinks | undefined;
  private given:
    Promise<ReadonlyMap<string, readonly { uid: string; attempt: number }[]>> | undefined;
  /** Where a resumed session listens (undefined: a new one). */
  private addressing: ResumeAddresses | undefined;
  /** The session's keys; undefined only for a session opened `insecure: 'trusted-network'`. */
  security: SessionSecurity | undefined;
  pipeline!: ManagerPipeline;
  store!: SessionStore;
  /** Whether the store and the files beside it can be written (a full disk: Session.onStoreError). */
  readonly health: StoreHealth;

  private constructor(
    readonly uid: string,
    readonly dir: string,
    readonly log: Logger & { close?: () => Promise<void> },
    private readonly fileLog: { close(): Promise<void> },
    resumed: JournalEntry[] | undefined,
  ) {
    this.resumed = resumed ?? [];
    this.resuming = resumed !== undefined;
    this.health = new StoreHealth(log);
    const memory = nativeMemory();
    if (memory !== undefined) this.trimmer = new MemoryTrimmer(memory, this.clock);
    else log.info('memory is not given back at rest', { why: nativeMemoryMissing() });
  }

  /** True for a resumed session until replay() starts following the store. */
  private resuming: boolean;

  static async open(options: SessionOptions = {}): Promise<ClientRuntime> {
    const { logger, ...rest } = options;
    const opts = parseSessionOptions(rest);
    if (opts.resume !== undefined && opts.uid !== undefined && opts.uid !== opts.resume) {
      throw new UsageError(`uid '${opts.uid}' and resume '${opts.resume}' name different sessions`);
    }
    const { uid, dir, journal, resumed, choice, mongo } = await sessionPlace(opts, logger);
    const file = fileLogger(dir, 'client', opts.logLevel ?? 'info', (f) =>
      logger?.warn('client.log cannot be written: its lines are dropped', { ...f }),
    );
    const log = logger !== undefined ? teeLogger(file, logger) : file;
    const s = new ClientRuntime(uid, dir, log, file, resumed);
    s.journal = journal;
    try {
      s.delivered = DeliveredCounters.open(dir);
      const entry = resumed?.find((e) => e.t === 'session');
      // a resumed session keeps the mode it was opened in: its agents hold keys or none
      const insecure = entry !== undefined ? entry.insecure === true : opts.insecure !== undefined;
      s.addressing = await ResumeAddresses.of(
        { uid, journal, resumed, choice },
        opts.bindHost,
        log,
      );
      await s.start(opts.updateWorkers ?? 1, `tcp://${opts.bindHost ?? '127.0.0.1'}:0`, insecure, {
        choice,
        mongo,
      });
    } catch (e) {
      log.error('session failed to open', errorMeta(e));
      await s.close();
      await mongo?.close();
      throw e;
    }
    return s;
  }

  private async start(
    nWorkers: number,
    listenAt: string,
    insecure: boolean,
    where: { choice: StoreChoice; mongo: MongoStore | undefined },
  ): Promise<void> {
    if (insecure) this.log.warn('session opened insecure: its ports admit anyone who reaches them');
    else this.security = await SessionSecurity.open(this.uid, this.dir, this.log);
    const store = where.mongo ?? (await openStore(where.choice, this.dir, this.uid, this.log));
    this.store = store;
    // a MongoDB session keeps its journal, key and counters in its database too
    const past = this.resuming ? this.resumed : undefined;
    if (where.mongo) this.mirror = await ClientMirror.start(where.mongo, this, past);
    this.follower = new StoreFollower(store, this.log, (n) => this.trimmer?.activity(n));
    if (store instanceof EmbeddedStore) {
      this.health.watch(store);
      // agents get a socket of the store per pilot (PilotLinks); with MongoDB they write to it
      this.storeServer = await StoreServer.start(store, {
        address: `inproc://${this.uid}/store`,
        session: this.uid,
        logger: this.log.child({ component: 'StoreServer' }),
      });
    } else this.health.watchReach(store);
    for (const s of [this.journal, this.delivered]) this.health.watch(s);
    // before the control socket is bound: a resumed session's agents reconnect to it at once
    this.security?.admitJournaled(journaledKeys(this.resumed));
    const at = this.addressing?.controlDown;
    const control = await openSessionControl(this.uid, listenAt, at, this.security, this.log);
    this.bridges.push(control.bridge);
    this.control = control.bus;
    this.uplinks = control.uplinks;
    const toStore = this.mirror?.gate(this.store) ?? this.store;
    ({ workers: this.workers, notes: this.notes } = clientWorkers(
      nWorkers,
      toStore,
      { session: this.uid, dir: this.dir },
      this.log,
    ));
    const notify = (ns: Notification[]): void => this.notify(ns);
    const tasks = this.tasks;
    this.pipeline = new ManagerPipeline(
      notify,
      this.clock,
      this.log,
      listenAt,
      this.uid,
      tasks,
      { clientCwd: process.cwd(), taskOf: (u) => tasks.get(u), ranIn: tasks.ranIn },
      {
        allow: (...a) => this.links.files.allow(...a),
        forget: (pilot, task) => this.links.files.forget(pilot, task),
      },
    );
    this.pipeline.serviceGone = toEveryAgent(this.control, this.log);
    this.pipeline.start();
    this.links = new PilotLinks({
      session: this.uid,
      log: this.log,
      security: this.security,
      pipeline: this.pipeline,
      store: this.storeServer,
      mongodb: where.choice.kind === 'mongodb' ? where.choice : undefined,
      uplinks: this.uplinks,
      listenAt,
      controlDown: control.down,
      given: () =>
        (this.given ??= throughOutage(
          () => givenInStore(store),
          () => this.closed,
        )),
    });
    await this.control.ready();
    if (this.addressing === undefined) {
      this.journal.append({
        t: 'session',
        uid: this.uid,
        addresses: { controlDown: control.down },
        ...(insecure ? { insecure: true } : {}),
      });
      this.follower.start();
    }
    this.heartbeat = heartbeats(this.control, HEARTBEAT_MS, this.clock, this.log);
  }

  /** Publishes client-side notifications to the session's own workers (less quiet ones). */
  notify(ns: Notification[]): void {
    this.notes.send(published(ns));
  }

  /** Every notification the store accepts, in store order, in bulks. */
  onNotifications(listener: NotificationListener): () => void {
    return this.follower.onNotifications(listener);
  }

  /** Listens for pilots reaching a final state. */
  onPilotEnded(listener: PilotEndedListener): () => void {
    this.pilotEnded.add(listener);
    return () => this.pilotEnded.delete(listener);
  }

  /** Called by the PilotManager that owns the pilot. */
  emitPilotEnded(uid: string, state: FinalPilotState, reason?: Reason): void {
    this.pipeline.pilotGone(uid, state);
    for (const l of this.pilotEnded) l(uid, state, reason);
    void this.recover(uid, state, reason);
  }

  /**
   * A pilot ended: tasks its agent never returned and that never ended have lost their holder,
   * so the client, the owner of last resort, takes them over (see recoveryPlan). Once the
   * store's notifications are delivered, an ended task is no longer on the list.
   */
  private async recover(pilot: string, state: FinalPilotState, why?: Reason): Promise<void> {
    try {
      await this.drained();
      const unreturned = this.pipeline.unreturned(pilot);
      const now = this.clock.now();
      const plan = recoveryPlan(
        pilot,
        state,
        why,
        unreturned,
        (u) => this.tasks.get(u),
        this.uid,
        now,
      );
      if (plan.notes.length === 0) return;
      this.log.warn('taking over tasks of an ended pilot', {
        pilot,
        ended: plan.notes.length - plan.retry.length,
        again: plan.retry.length,
      });
      // what a lost (not dead) agent still says of these attempts is refused from now on
      this.pipeline.fence(
        pilot,
        plan.retry.map((t) => t.uid),
      );
      this.notify(plan.notes);
      this.pipeline.retry(plan.retry);
    } catch (e) {
      this.log.error('recovery of an ended pilot failed', { pilot, ...errorMeta(e) });
    }
  }

  nextPilotUid(): string {
    return `pilot.${String(this.pilotCounter++).padStart(4, '0')}`;
  }

  /**
   * A manager's place in the session: its name (`tmgr.0000`, the same for the same creation
   * order when resumed) and its cursor in the delivered counters.
   */
  registerManager(kind: 'pmgr' | 'tmgr'): { name: string; delivery: DeliveryCursor } {
    const n = this.managerKinds.get(kind) ?? 0;
    this.managerKinds.set(kind, n + 1);
    return {
      name: `${kind}.${String(n).padStart(4, '0')}`,
      delivery: new DeliveryCursor(this.delivered, this.managers++),
    };
  }

  /** True while a resumed session has not started delivering (see `replay`). */
  get replayPending(): boolean {
    return this.resuming;
  }

  /**
   * A resumed session: starts following the store from its beginning (managers rebuild every
   * state, delivering only the callbacks not delivered before) and resolves once all it holds
   * now is delivered. A no-op for a new session or a second call.
   */
  replay(): Promise<void> {
    const unwritable = this.health.error;
    if (unwritable !== undefined) return Promise.reject(unwritable); // waits start with a replay
    this.replaying ??= this.doReplay();
    return this.replaying;
  }

  private replaying: Promise<void> | undefined;

  private async doReplay(): Promise<void> {
    if (!this.resuming) return;
    await takeUndelivered(this.resumed, this.store, this.uid, this.log); // before any decision
    const hooks = this.replayHooks.splice(0).sort((a, b) => a.order - b.order);
    for (const h of hooks) await h.before();
    // a session that moved tells its agents where it listens before they are asked to report in
    await this.addressing?.publish(this.links.controlDown, this.journal, () => this.closed);
    this.resuming = false;
    const known = (uid: string): boolean => this.tasks.has(uid);
    const unknown = this.mirror && unknownTasks((l) => this.onNotifications(l), known, this.log);
    this.follower.start();
    await this.drained();
    unknown?.();
    for (const h of hooks) h.after();
  }

  private readonly replayHooks: {
    order: number;
    before: () => Promise<void>;
    after: () => void;
  }[] = [];

  /**
   * Managers of a resumed session: `before` runs as the replay starts, `after` once it has
   * caught up; PilotManagers (order 0) before TaskManagers (order 1).
   */
  onReplay(order: number, before: () => Promise<void>, after: () => void): void {
    this.replayHooks.push({ order, before, after });
  }

  private readonly pilotCapacities = new Map<string, { cores: number; gpus: number }>();

  /** What a live pilot holds, as its PilotManager knows it (TaskManagers route by it). */
  pilotCapacity(uid: string): { uid: string; cores: number; gpus: number } | undefined {
    const c = this.pilotCapacities.get(uid);
    return c === undefined ? undefined : { uid, ...c };
  }

  /** Called by PilotManagers; `undefined` once the pilot has ended. */
  setPilotCapacity(uid: string, c: { cores: number; gpus: number } | undefined): void {
    if (c === undefined) this.pilotCapacities.delete(uid);
    else this.pilotCapacities.set(uid, c);
  }

  /** Resolves once every notification the store holds now has been delivered to listeners. */
  drained(): Promise<void> {
    return this.follower.drained();
  }

  /** Issues a pilot's keys and binds its sockets (`before`: a resumed session's). */
  openPilot(pilot: string, before?: PilotLink): Promise<PilotLink> {
    const open = (b?: Partial<PilotLink>): Promise<PilotLink> => this.links.open(pilot, b);
    return this.addressing?.open(pilot, before, open) ?? open(before);
  }

  /** Messages and connections the session refused so far (see docs/security.md). */
  refusals(): { connections: number; messages: number } {
    return {
      connections: this.security?.refused() ?? 0,
      messages: (this.links?.refused() ?? 0) + this.pipeline.refused(),
    };
  }

  /** Runs `fn` at close, before the store and the bridges go (PilotManagers cancel pilots). */
  atClose(fn: () => Promise<void>): void {
    this.closers.push(fn);
  }

  /** Refuses new work when the session is closed or its store cannot write (StoreHealth). */
  assertOpen(): void {
    if (this.closed) throw new UsageError(`session ${this.uid} is closed`);
    this.health.check();
  }

  /** Shuts down every pilot of the session, flushes the store and releases every socket. */
  async close(): Promise<void> {
    if (this.closed) return;
    // a resumed session closed before it delivered anything: take its pilots back to end them
    await (this.replaying ??= this.doReplay()).catch((e: unknown) =>
      this.log.error('replay failed', errorMeta(e)),
    );
    this.closed = true;
    clearInterval(this.heartbeat);
    const refused = this.pipeline !== undefined ? this.refusals() : undefined;
    if (refused !== undefined && refused.connections + refused.messages > 0) {
      this.log.warn('peers and messages refused during the session', refused);
    }
    this.trimmer?.close();
    for (const fn of this.closers.splice(0).reverse()) {
      await fn().catch((e: unknown) => this.log.error('close step failed', errorMeta(e)));
    }
    await this.pipeline?.close();
    this.notes?.flush();
    await Promise.all(this.workers.map((w) => w.close()));
    await this.mirror?.close();
    await closeStore(this.storeServer, this.store, () => this.follower?.endWatch());
    await this.follower?.stop();
    await this.control?.close();
    await this.uplinks?.close();
    await this.links?.close();
    await Promise.all(this.bridges.map((b) => b.close()));
    await this.security?.close();
    await this.addressing?.close();
    this.delivered?.close();
    await this.fileLog.close();
    this.health.throwIfLost(this.store, this.workers);
  }
}

const runtimes = new WeakMap<object, ClientRuntime>();

/** Ties a public facade (a Session) to its runtime. */
export function bindRuntime(facade: object, runtime: ClientRuntime): void {
  runtimes.set(facade, runtime);
}

/** The runtime behind a Session (managers attach to it); a clear error for anything else. */
export function runtimeOf(session: object): ClientRuntime {
  const rt = runtimes.get(session);
  if (rt === undefined) {
    throw new UsageError('expected a Session from Session.open(), got something else');
  }
  return rt;
}
