/**
 * The Executor's process adapter: a few long-lived spawner helpers, fed over pipes, fork the
 * tasks and report their starts and exits, so the big agent process never forks on its hot path
 * (docs/architecture.md, docs/launch-methods.md).
 *
 * Two helpers speak the same protocol with the same semantics: 'native' (the default,
 * native/spawner/pf-spawner.c built by `npm run build` into dist/native/pf-spawner: posix_spawn,
 * SIGCHLD through a signalfd) and 'node' (helper/main.ts, a slim Node process, the fallback
 * without a C compiler, with a warning; ~9x the helper CPU per spawn: native/spawner/spawn-rate.js).
 * SpawnerPoolOptions.helper, else the PILOTFISH_SPAWNER variable ('native' | 'node'), picks one.
 *
 * A kill reaches every process a task started, and what a task leaves behind when its main
 * process exits is killed too (SIGTERM, SIGKILL after killGraceMs), by the helper: through a
 * cgroup per task where the machine offers cgroup v2 with cgroup.kill, else through /proc
 * (helper/tracking.ts; SpawnerPoolOptions.tracking or PILOTFISH_TASK_TRACKING pick one). The
 * cgroup costs the C helper ~90 us more CPU per spawn (a mkdir, two moves of the helper, an
 * rmdir: ~75 -> ~165 us), /proc tracking ~15-35 us (its sweeps); e2e throughput did not change
 * out of the noise (docs/performance.md, 2026-11-24).
 *
 * With SpawnerPoolOptions.streamDir, each helper also writes a stream file there, for the
 * tasks spawned with output 'stream' (SpawnSpec.stream): their stdout and stderr framed, and
 * their exits carry the tails (ExitedEvent.output); ~10-20 us more helper CPU per spawn, where
 * two new files per task cost ~1,000 us (spawn-rate.js --output devnull,files,stream, 2026-11-24).
 * A task's limits (SpawnSpec.limits) go into cgroup v1 or v2 controllers (pool-limits.ts).
 * Keep mode (SpawnerPoolOptions.keep): helpers that outlive the agent, and attach() by which a
 * new agent takes them over (pool-keep.ts).
 */
import { mkdirSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { UsageError, errorMeta } from '../../../errors';
import { withTimeout } from '../../../lib/deferred';
import type { Logger } from '../../../lib/logger';
import type { ExitedEvent, FailedEvent, StartedEvent } from '../effects';
import { exitedOf } from './helper-exit';
import { childConn, connectKeep, socketConn } from './helper-conn';
import type { HelperEvent, KillSignal, SpawnSpec, TrackingKind } from './helper/protocol';
import { PoolHelper, type OpenConn } from './pool-helper';
import { checkKeep, keepArgs, keepSocket, mergeStatus, nextGenerations } from './pool-keep';
import type { SpawnerStatus } from './pool-keep';
import { PoolLimits, type TaskLimiter } from './pool-limits';
import { PoolTracking } from './pool-tracking';
import { pickHelper, spawnerCommand, type SpawnerHelper } from './spawner-command';
import { DEFAULT_RESPAWN, callHandler, streamLimitArgs } from './spawner-pool-options';
import type { SpawnerPoolOptions } from './spawner-pool-options';

export type { RespawnPolicy, SpawnerHandlers, SpawnerPoolOptions } from './spawner-pool-options';
export type { EndedEvent, KeepOptions, SpawnerStatus } from './pool-keep';

export {
  SPAWNER_ENV,
  TRACKING_ENV,
  nativeSpawner,
  spawnerCommand,
  spawnerScript,
  type SpawnerHelper,
} from './spawner-command';

/**
 * The Executor's process adapter: a few lean spawner helpers (the C pf-spawner, or
 * helper/main.ts) that fork tasks and report starts and exits, so the big agent process never
 * forks on the hot path.
 */
export class SpawnerPool {
  private readonly helpers: PoolHelper[] = [];
  private readonly owner = new Map<string, PoolHelper>();
  /** Tasks whose kills signal their process alone (SpawnSpec.killScope 'process'). */
  private readonly processOnly = new Set<string>();
  private readonly log: Logger;
  private closing: Promise<void> | undefined;
  private failedSoon: FailedEvent[] = [];
  /** When helpers died unasked, within the respawn window. */
  private deaths: number[] = [];
  /** Set once helpers kept dying: why every spawn fails now. */
  private unusable: string | undefined;
  /** An attach failed: the helpers it reached were let go of, alive. */
  private abandoned = false;
  /** Per slot, the generation of its latest helper (streamDir). */
  private readonly generations: number[] = [];
  private readonly files: string[] = [];

  private constructor(
    private readonly opts: SpawnerPoolOptions,
    /** The kind of helper this pool starts (attached: the kind of its replacements). */
    readonly helper: SpawnerHelper,
    private readonly command: { file: string; args: string[] },
    private readonly track: PoolTracking,
    readonly limits: TaskLimiter, // the task limits this machine lets it set
  ) {
    this.log = opts.logger;
  }

  /** Starts `count` helpers; resolves once every one has reported ready. */
  static async start(opts: SpawnerPoolOptions): Promise<SpawnerPool> {
    const pool = SpawnerPool.make(opts);
    for (let i = 0; i < opts.count; i++) pool.launch(i);
    const ready = Promise.all(pool.helpers.map((h) => h.ready.promise));
    try {
      await withTimeout(ready, opts.readyTimeoutMs ?? 10_000, 'spawner helpers start');
    } catch (e) {
      await pool.close();
      throw e;
    }
    const { helper, command, track, limits } = pool;
    pool.log.info('spawner helpers started', {
      helper,
      command: command.file,
      count: opts.count,
      pids: pool.helpers.map((h) => h.pid),
      tracking: pool.tracking,
      ...(track.base === undefined ? {} : { cgroup: track.base }),
      limits: limits.controllers,
      ...(opts.keep === undefined ? {} : { keep: opts.keep.dir }),
    });
    return pool;
  }

  /**
   * Re-attaches to the `count` helpers a keep pool left running (opts.keep, required: the same
   * directory), through their sockets, instead of starting helpers. The events each held reach
   * the handlers first; the tasks each runs or has queued are this pool's from then on. Resolves
   * once every one has said ready and its status; rejects, naming the socket, when one cannot be
   * reached within readyTimeoutMs (and detaches from those it reached: they wait for another).
   */
  static async attach(opts: SpawnerPoolOptions): Promise<SpawnerPool> {
    if (opts.keep === undefined) {
      throw new UsageError("SpawnerPool.attach needs the option 'keep' (the helpers' directory)");
    }
    const pool = SpawnerPool.make(opts);
    const ms = opts.readyTimeoutMs ?? 10_000;
    if (opts.streamDir !== undefined) {
      const next = nextGenerations(readdirSync(opts.streamDir), opts.count);
      next.forEach((g, slot) => (pool.generations[slot] = g - 1));
    }
    const reach = async (slot: number): Promise<void> => {
      const file = keepSocket(opts.keep!, slot);
      const s = await connectKeep(file, ms);
      if (pool.abandoned) return void s.destroy();
      const h = pool.add(slot, undefined, (on) => socketConn(s, file, on, pool.log));
      await h.ready.promise;
      const { running, queued } = await h.askStatus();
      for (const t of running) pool.adopt(h, t.uid, t.pid);
      for (const uid of queued) pool.adopt(h, uid, undefined);
    };
    const slots = Array.from({ length: opts.count }, (_, slot) => reach(slot));
    try {
      await withTimeout(Promise.all(slots), ms, 'spawner helpers re-attach');
    } catch (e) {
      await pool.abandon();
      throw e;
    }
    pool.log.info('spawner helpers re-attached', {
      keep: opts.keep.dir,
      count: opts.count,
      pids: pool.helpers.map((h) => h.pid),
      tasks: pool.owner.size,
    });
    return pool;
  }

  /** The checks, helper kind, tracking and limits of a pool about to start or attach. */
  private static make(opts: SpawnerPoolOptions): SpawnerPool {
    if (!Number.isInteger(opts.count) || opts.count < 1) {
      throw new UsageError(`SpawnerPool count must be an integer >= 1, got ${opts.count}`);
    }
    if (opts.keep !== undefined) checkKeep(opts.keep, opts.count);
    const helper = pickHelper(opts, opts.logger);
    const command = spawnerCommand(helper);
    const track = PoolTracking.choose(opts, opts.logger);
    if (opts.streamDir !== undefined) mkdirSync(opts.streamDir, { recursive: true, mode: 0o700 });
    if (opts.keep !== undefined) mkdirSync(opts.keep.dir, { recursive: true, mode: 0o700 });
    const limits = PoolLimits.make(opts.limits ?? {}, opts.logger, track.base, track.why);
    return new SpawnerPool(opts, helper, command, track, limits);
  }

  /** An attach that failed lets go of the helpers it reached: they wait for another master. */
  private async abandon(): Promise<void> {
    this.abandoned = true;
    this.closing = Promise.resolve();
    for (const h of this.helpers) h.conn.drop();
    await Promise.all(this.helpers.map((h) => h.closed.promise));
    await this.track.close();
    await this.limits.close();
  }

  /** How the helpers track the processes of tasks: 'cgroup' only if every one does. */
  get tracking(): TrackingKind {
    return this.helpers.every((h) => h.tracking?.kind === 'cgroup') ? 'cgroup' : 'proc';
  }

  /**
   * Starts a task on the least loaded helper; one `after` a task goes to that task's helper,
   * which starts it when that one ends (while that helper lives; else at once, `after` dropped).
   */
  spawn(spec: SpawnSpec): void {
    if (this.owner.has(spec.uid)) {
      this.log.error('spawn of a task already running ignored', { taskId: spec.uid });
      return;
    }
    const follows = spec.after === undefined ? undefined : this.owner.get(spec.after);
    if (spec.after !== undefined && follows?.alive !== true) {
      const { after: _gone, ...alone } = spec; // it ended (or never ran here): start at once
      spec = alone;
    }
    const h =
      this.closing !== undefined ? undefined : follows?.alive ? follows : this.leastLoaded();
    if (h === undefined) {
      const why = this.closing
        ? 'the spawner pool is closed'
        : (this.unusable ?? 'no spawner helper is running');
      this.failSoon({ uid: spec.uid, code: 'E_SPAWNER_DIED', message: why });
      return;
    }
    h.tasks.set(spec.uid, undefined);
    this.owner.set(spec.uid, h);
    if (spec.killScope === 'process') this.processOnly.add(spec.uid);
    h.send(this.limits.request(spec));
  }

  /** Signals every process of the task (srun: srun alone); a uid that already exited is ignored. */
  kill(uid: string, signal: KillSignal): void {
    const h = this.owner.get(uid);
    if (h !== undefined) h.send({ op: 'kill', uid, signal });
  }

  /** Every stream file its helpers were given (streamDir), in the order they started. */
  streamFiles(): readonly string[] {
    return this.files;
  }

  /** Number of tasks the helpers run now. */
  running(): number {
    return this.owner.size;
  }

  /**
   * What every live helper runs, has queued and ended lately (its last 1,024 exits and failures,
   * as the handlers got them or would have): what a pool that attached reconciles with, as the
   * events a dead master read and never passed on are among them.
   */
  async status(): Promise<SpawnerStatus> {
    const live = this.helpers.filter((h) => h.alive);
    const all = Promise.all(live.map((h) => h.askStatus()));
    const ms = this.opts.readyTimeoutMs ?? 10_000;
    return mergeStatus(await withTimeout(all, ms, 'spawner helpers status'));
  }

  /**
   * Stops every helper: ends its stdin (keep mode: sends it `end`); each SIGKILLs the tasks it
   * still runs, reports their exits and exits. Resolves when all helpers have exited.
   */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    for (const h of this.helpers) {
      if (!h.alive) continue;
      if (this.opts.keep !== undefined) h.send({ op: 'end' });
      h.flush();
      h.conn.endInput();
    }
    const all = Promise.all(this.helpers.map((h) => h.closed.promise));
    try {
      await withTimeout(all, this.opts.closeTimeoutMs ?? 10_000, 'spawner helpers exit');
    } catch (e) {
      this.log.error('spawner helpers did not exit: killing them', errorMeta(e));
      for (const h of this.helpers) if (h.alive) h.conn.kill(h.pid);
      await all;
    }
    await this.track.close(); // first: cgroup v2 limits give the tree back once the base is gone
    await this.limits.close();
  }

  private launch(slot: number): void {
    const command = this.command;
    // No execArgv: a Node helper must not inherit the agent's (or jest's) flags.
    const env = this.opts.env === undefined ? process.env : { ...process.env, ...this.opts.env };
    const args = [...command.args, ...this.track.args(this.opts.killGraceMs ?? 3_000)];
    if (this.track.base !== undefined) args.push(...this.limits.helperArgs());
    args.push('--hold-ms', String(this.opts.holdMs ?? 0));
    if (this.opts.keep !== undefined) args.push(...keepArgs(this.opts.keep, slot));
    let stream: string | undefined;
    if (this.opts.streamDir !== undefined) {
      const generation = (this.generations[slot] = (this.generations[slot] ?? -1) + 1);
      stream = path.join(this.opts.streamDir, `spawner.${slot}.${generation}.pfout`);
      this.files.push(stream);
      args.push('--stream', stream, ...streamLimitArgs(this.opts.streamLimits, this.opts.count));
    }
    this.add(slot, stream, (on) => childConn(command.file, args, env, on, this.log));
  }

  /** A helper in `slot`, reached through the conn `open` makes. */
  private add(slot: number, stream: string | undefined, open: OpenConn): PoolHelper {
    const on = {
      events: (h: PoolHelper, evs: HelperEvent[]) => this.onEvents(h, evs),
      closed: (h: PoolHelper, how: string, code: number | null, signal: string | null) =>
        this.onClose(h, how, code, signal),
    };
    const h = new PoolHelper(slot, stream, open, on, this.log);
    this.helpers.push(h);
    return h;
  }

  /** A task `h` runs that this pool did not spawn (it attached): this pool's from now on. */
  private adopt(h: PoolHelper, uid: string, pid: number | undefined): void {
    if (this.owner.has(uid)) return;
    h.tasks.set(uid, pid);
    this.owner.set(uid, h);
  }

  private leastLoaded(): PoolHelper | undefined {
    let best: PoolHelper | undefined;
    for (const h of this.helpers) {
      if (h.alive && (best === undefined || h.tasks.size < best.tasks.size)) best = h;
    }
    return best;
  }

  private onEvents(h: PoolHelper, events: HelperEvent[]): void {
    const started: StartedEvent[] = [];
    const exited: ExitedEvent[] = [];
    const failed: FailedEvent[] = [];
    for (const ev of events) {
      switch (ev.ev) {
        case 'ready':
          h.readied(ev, (pid, why) => this.track.refused(pid, why));
          break;
        case 'started':
          if (h.tasks.has(ev.uid)) h.tasks.set(ev.uid, ev.pid);
          else this.adopt(h, ev.uid, ev.pid); // held by a helper this pool attached to
          started.push({ uid: ev.uid, pid: ev.pid, ...(ev.t === undefined ? {} : { t: ev.t }) });
          break;
        case 'exited': {
          const lost = h.lost.get(ev.uid);
          // before forget() removes them
          const oom = this.limits.ended(ev.uid, ev.oomKills, ev.clean === true);
          this.forget(h, ev.uid);
          exited.push(exitedOf(ev, lost, oom));
          break;
        }
        case 'lost': // before the exit, when the task exited in the turn that lost its frames
          h.lostFrames(ev);
          break;
        case 'failed':
          this.forget(h, ev.uid);
          failed.push({ uid: ev.uid, code: ev.code, message: ev.message });
          break;
        case 'error':
          this.log.warn('spawner helper reported an error', { pid: h.pid, message: ev.message });
          break;
        case 'status':
          h.answered(ev);
          break;
        default:
          this.log.warn('unknown event from spawner helper', { pid: h.pid, event: ev });
      }
    }
    this.deliver(started, exited, failed);
  }

  /**
   * A helper exited (attached: its socket closed): expected during close; otherwise its tasks
   * are lost, so fail them.
   */
  private onClose(h: PoolHelper, how: string, code: number | null, signal: string | null): void {
    h.died(how);
    if (this.abandoned) return h.closed.resolve(); // let go of, alive: its tasks run on
    const lost = [...h.tasks];
    // Its tasks run in their own sessions and would outlive it: stop them and their leftovers.
    const tasks = lost.map(([uid, pid]) => ({ pid, processOnly: this.processOnly.has(uid) }));
    for (const [uid] of lost) this.forget(h, uid);
    this.track.helperDied(h.pid, h.leftovers(), tasks);
    if (this.closing === undefined || lost.length > 0) {
      this.log.error('spawner helper died', {
        pid: h.pid,
        exitCode: code,
        signal,
        lostTasks: lost.length,
      });
    }
    const message = `the spawner helper (pid ${h.pid}) died (${how})`;
    this.deliver(
      [],
      [],
      lost.map(([uid]) => ({ uid, code: 'E_SPAWNER_DIED', message })),
    );
    h.closed.resolve();
    if (this.closing === undefined) this.replace(h, message);
  }

  /**
   * A helper died unasked: another takes its place, so the pool never shrinks, unless helpers
   * keep dying (a broken binary, no memory, no processes left): then it gives up and says so.
   */
  private replace(dead: PoolHelper, message: string): void {
    const { max, windowMs } = this.opts.respawn ?? DEFAULT_RESPAWN;
    const now = Date.now();
    this.deaths = [...this.deaths.filter((t) => now - t < windowMs), now];
    this.helpers.splice(this.helpers.indexOf(dead), 1);
    if (this.unusable !== undefined) return;
    if (this.deaths.length > max) {
      this.unusable = `spawner helpers keep dying: ${this.deaths.length} in ${windowMs / 1000} s, the last: ${message}`;
      this.log.error('spawner helpers keep dying: not replaced any more', {
        message: this.unusable,
      });
      const { handlers } = this.opts;
      callHandler(this.log, 'unusable', [this.unusable], ([m]) => handlers.unusable?.(m!));
      return;
    }
    this.launch(dead.slot);
    this.log.warn('spawner helper replaced', { dead: dead.pid, pid: this.helpers.at(-1)?.pid });
  }

  private forget(h: PoolHelper, uid: string): void {
    this.limits.ended(uid);
    h.tasks.delete(uid);
    h.lost.delete(uid);
    if (this.owner.get(uid) === h) {
      this.owner.delete(uid);
      this.processOnly.delete(uid);
    }
  }

  /** Failures found inside spawn(): reported on a later turn, never inside the caller's handler. */
  private failSoon(ev: FailedEvent): void {
    this.failedSoon.push(ev);
    if (this.failedSoon.length > 1) return;
    setImmediate(() => {
      const failed = this.failedSoon;
      this.failedSoon = [];
      this.deliver([], [], failed);
    });
  }

  private deliver(started: StartedEvent[], exited: ExitedEvent[], failed: FailedEvent[]): void {
    const { handlers } = this.opts;
    callHandler(this.log, 'started', started, (e) => handlers.started(e));
    callHandler(this.log, 'failed', failed, (e) => handlers.failed(e));
    callHandler(this.log, 'exited', exited, (e) => handlers.exited(e));
  }
}
