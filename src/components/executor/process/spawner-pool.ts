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
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { UsageError, errorMeta } from '../../../errors';
import { deferred, withTimeout, type Deferred } from '../../../lib/deferred';
import type { Logger } from '../../../lib/logger';
import type { ExitedEvent, FailedEvent, StartedEvent } from '../effects';
import { exitedOf } from './helper-exit';
import type {
  HelperEvent,
  HelperRequest,
  KillSignal,
  SpawnSpec,
  TrackingKind,
} from './helper/protocol';
import { PoolLimits, type TaskLimiter } from './pool-limits';
import { PoolTracking, type HelperTracking } from './pool-tracking';
import {
  requestedHelper,
  nativeSpawner,
  nativeSpawnerMissing,
  spawnerCommand,
  type SpawnerHelper,
} from './spawner-command';
import { DEFAULT_RESPAWN, streamLimitArgs, type SpawnerPoolOptions } from './spawner-pool-options';

export type { RespawnPolicy, SpawnerHandlers, SpawnerPoolOptions } from './spawner-pool-options';

export {
  SPAWNER_ENV,
  TRACKING_ENV,
  nativeSpawner,
  spawnerCommand,
  spawnerScript,
  type SpawnerHelper,
} from './spawner-command';

interface Helper {
  proc: ChildProcess;
  pid: number;
  /** Its place in the pool (0..count-1), which a replacement takes. */
  slot: number;
  /** uid -> pid (undefined until started) of every task this helper runs. */
  tasks: Map<string, number | undefined>;
  /** Its stream file (streamDir), and the errno of each running task whose frames it lost. */
  stream: string | undefined;
  lost: Map<string, { errno: string; file: string }>;
  outbox: string[];
  partial: string;
  alive: boolean;
  /** From its ready event. */
  tracking?: HelperTracking;
  ready: Deferred<void>;
  closed: Deferred<void>;
}

/**
 * The Executor's process adapter: a few lean spawner helpers (the C pf-spawner, or
 * helper/main.ts) that fork tasks and report starts and exits, so the big agent process never
 * forks on the hot path.
 */
export class SpawnerPool {
  private readonly helpers: Helper[] = [];
  private readonly owner = new Map<string, Helper>();
  /** Tasks whose kills signal their process alone (SpawnSpec.killScope 'process'). */
  private readonly processOnly = new Set<string>();
  private readonly log: Logger;
  private closing: Promise<void> | undefined;
  private failedSoon: FailedEvent[] = [];
  /** When helpers died unasked, within the respawn window. */
  private deaths: number[] = [];
  /** Set once helpers kept dying: why every spawn fails now. */
  private unusable: string | undefined;
  /** Per slot, the generation of its latest helper (streamDir). */
  private readonly generations: number[] = [];
  private readonly files: string[] = [];

  private constructor(
    private readonly opts: SpawnerPoolOptions,
    /** The kind of helper this pool runs. */
    readonly helper: SpawnerHelper,
    private readonly command: { file: string; args: string[] },
    private readonly track: PoolTracking,
    readonly limits: TaskLimiter, // the task limits this machine lets it set
  ) {
    this.log = opts.logger;
  }

  /** Starts `count` helpers; resolves once every one has reported ready. */
  static async start(opts: SpawnerPoolOptions): Promise<SpawnerPool> {
    if (!Number.isInteger(opts.count) || opts.count < 1) {
      throw new UsageError(`SpawnerPool count must be an integer >= 1, got ${opts.count}`);
    }
    let helper = requestedHelper(opts);
    if (helper === undefined) {
      helper = nativeSpawner() !== undefined ? 'native' : 'node';
      if (helper === 'node') {
        const missing = nativeSpawnerMissing();
        opts.logger.warn('native spawner helper not built: using the slower Node helper', missing);
      }
    }
    const command = spawnerCommand(helper);
    const track = PoolTracking.choose(opts, opts.logger);
    if (opts.streamDir !== undefined) mkdirSync(opts.streamDir, { recursive: true, mode: 0o700 });
    const limits = PoolLimits.make(opts.limits ?? {}, opts.logger, track.base, track.why);
    const pool = new SpawnerPool(opts, helper, command, track, limits);
    for (let i = 0; i < opts.count; i++) pool.launch(i);
    const ready = Promise.all(pool.helpers.map((h) => h.ready.promise));
    try {
      await withTimeout(ready, opts.readyTimeoutMs ?? 10_000, 'spawner helpers start');
    } catch (e) {
      await pool.close();
      throw e;
    }
    pool.log.info('spawner helpers started', {
      helper,
      command: command.file,
      count: opts.count,
      pids: pool.helpers.map((h) => h.pid),
      tracking: pool.tracking,
      ...(track.base === undefined ? {} : { cgroup: track.base }),
      limits: limits.controllers,
    });
    return pool;
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
    this.send(h, this.limits.request(spec));
  }

  /** Signals every process of the task (srun: srun alone); a uid that already exited is ignored. */
  kill(uid: string, signal: KillSignal): void {
    const h = this.owner.get(uid);
    if (h !== undefined) this.send(h, { op: 'kill', uid, signal });
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
   * Ends every helper's stdin; each SIGKILLs the tasks it still runs, reports their exits and
   * exits. Resolves when all helpers have exited.
   */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    for (const h of this.helpers) {
      if (!h.alive) continue;
      this.flush(h);
      h.proc.stdin?.end();
    }
    const all = Promise.all(this.helpers.map((h) => h.closed.promise));
    try {
      await withTimeout(all, this.opts.closeTimeoutMs ?? 10_000, 'spawner helpers exit');
    } catch (e) {
      this.log.error('spawner helpers did not exit: killing them', errorMeta(e));
      for (const h of this.helpers) if (h.alive) h.proc.kill('SIGKILL');
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
    let stream: string | undefined;
    if (this.opts.streamDir !== undefined) {
      const generation = (this.generations[slot] = (this.generations[slot] ?? -1) + 1);
      stream = path.join(this.opts.streamDir, `spawner.${slot}.${generation}.pfout`);
      this.files.push(stream);
      args.push('--stream', stream, ...streamLimitArgs(this.opts.streamLimits, this.opts.count));
    }
    const proc = spawn(command.file, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const h: Helper = {
      proc,
      pid: proc.pid ?? -1,
      slot,
      tasks: new Map(),
      lost: new Map(),
      outbox: [],
      partial: '',
      alive: true,
      stream,
      ready: deferred<void>(),
      closed: deferred<void>(),
    };
    this.helpers.push(h);
    // only start() waits for readiness: a replacement that dies early is reported by 'close'
    h.ready.promise.catch(() => undefined);
    proc.stdout?.setEncoding('utf8');
    proc.stdout?.on('data', (chunk: string) => this.onOutput(h, chunk));
    proc.stderr?.setEncoding('utf8');
    proc.stderr?.on('data', (text: string) =>
      this.log.warn('spawner helper stderr', { pid: h.pid, text }),
    );
    // EPIPE once a helper died: 'close' below reports the death.
    proc.stdin?.on('error', (e) => this.log.debug('spawner helper stdin error', errorMeta(e)));
    proc.on('error', (e) =>
      this.log.error('spawner helper process error', { pid: h.pid, ...errorMeta(e) }),
    );
    proc.on('close', (code, signal) => this.onClose(h, code, signal));
  }

  private leastLoaded(): Helper | undefined {
    let best: Helper | undefined;
    for (const h of this.helpers) {
      if (h.alive && (best === undefined || h.tasks.size < best.tasks.size)) best = h;
    }
    return best;
  }

  /** Queues a request; all requests of one synchronous run (a core handler) go in one write. */
  private send(h: Helper, msg: HelperRequest): void {
    h.outbox.push(JSON.stringify(msg));
    if (h.outbox.length === 1) queueMicrotask(() => this.flush(h));
  }

  private flush(h: Helper): void {
    if (h.outbox.length === 0) return;
    const text = h.outbox.join('\n') + '\n';
    h.outbox = [];
    const stdin = h.proc.stdin;
    if (h.alive && stdin != null && !stdin.writableEnded) stdin.write(text);
  }

  private onOutput(h: Helper, chunk: string): void {
    const lines = (h.partial + chunk).split('\n');
    h.partial = lines.pop() ?? '';
    const started: StartedEvent[] = [];
    const exited: ExitedEvent[] = [];
    const failed: FailedEvent[] = [];
    for (const line of lines) {
      if (line === '') continue;
      let ev: HelperEvent;
      try {
        ev = JSON.parse(line) as HelperEvent;
      } catch (e) {
        this.log.error('unreadable line from spawner helper', {
          pid: h.pid,
          line,
          ...errorMeta(e),
        });
        continue;
      }
      switch (ev.ev) {
        case 'ready': {
          h.tracking = { kind: ev.tracking, markPrefix: ev.markPrefix };
          const refused = ev.why === undefined ? undefined : this.track.refused(h.pid, ev.why);
          if (refused === undefined) h.ready.resolve();
          else h.ready.reject(refused);
          break;
        }
        case 'started':
          if (h.tasks.has(ev.uid)) h.tasks.set(ev.uid, ev.pid);
          started.push(
            ev.t === undefined
              ? { uid: ev.uid, pid: ev.pid }
              : { uid: ev.uid, pid: ev.pid, t: ev.t },
          );
          break;
        case 'exited': {
          const lost = h.lost.get(ev.uid);
          const oom = this.limits.ended(ev.uid, ev.oomKills); // before forget() removes them
          this.forget(h, ev.uid);
          exited.push(exitedOf(ev, lost, oom));
          break;
        }
        case 'lost': // before the exit, when the task exited in the turn that lost its frames
          if (h.tasks.has(ev.uid)) {
            h.lost.set(
              ev.uid,
              h.lost.get(ev.uid) ?? { errno: ev.errno, file: ev.file ?? h.stream! },
            );
          } else this.log.warn('output of an ended task lost', { pid: h.pid, ...ev });
          break;
        case 'failed':
          this.forget(h, ev.uid);
          failed.push({ uid: ev.uid, code: ev.code, message: ev.message });
          break;
        case 'error':
          this.log.warn('spawner helper reported an error', { pid: h.pid, message: ev.message });
          break;
        default:
          this.log.warn('unknown event from spawner helper', { pid: h.pid, line });
      }
    }
    this.deliver(started, exited, failed);
  }

  /** A helper exited: expected during close; otherwise its tasks are lost, so fail them. */
  private onClose(h: Helper, code: number | null, signal: string | null): void {
    h.alive = false;
    const lost = [...h.tasks];
    // Its tasks run in their own sessions and would outlive it: stop them and their leftovers.
    const tasks = lost.map(([uid, pid]) => ({ pid, processOnly: this.processOnly.has(uid) }));
    for (const [uid] of lost) this.forget(h, uid);
    this.track.helperDied(h.pid, h.tracking, tasks);
    if (this.closing === undefined || lost.length > 0) {
      this.log.error('spawner helper died', {
        pid: h.pid,
        exitCode: code,
        signal,
        lostTasks: lost.length,
      });
    }
    const how = signal !== null ? `killed by ${signal}` : `exit code ${code}`;
    const message = `the spawner helper (pid ${h.pid}) died (${how})`;
    this.deliver(
      [],
      [],
      lost.map(([uid]) => ({ uid, code: 'E_SPAWNER_DIED', message })),
    );
    h.ready.reject(new Error(`spawner helper (pid ${h.pid}) exited before it was ready (${how})`));
    h.closed.resolve();
    if (this.closing === undefined) this.replace(h, message);
  }

  /**
   * A helper died unasked: another takes its place, so the pool never shrinks, unless helpers
   * keep dying (a broken binary, no memory, no processes left): then it gives up and says so.
   */
  private replace(dead: Helper, message: string): void {
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
      this.call('unusable', [this.unusable], ([m]) => this.opts.handlers.unusable?.(m!));
      return;
    }
    this.launch(dead.slot);
    this.log.warn('spawner helper replaced', { dead: dead.pid, pid: this.helpers.at(-1)?.pid });
  }

  private forget(h: Helper, uid: string): void {
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
    this.call('started', started, (e) => handlers.started(e));
    this.call('failed', failed, (e) => handlers.failed(e));
    this.call('exited', exited, (e) => handlers.exited(e));
  }

  private call<T>(kind: string, events: T[], fn: (events: T[]) => void): void {
    if (events.length === 0) return;
    try {
      fn(events);
    } catch (e) {
      this.log.error('spawner event handler threw', {
        kind,
        count: events.length,
        ...errorMeta(e),
      });
    }
  }
}
