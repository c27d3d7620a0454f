import { errorMeta } from '../../errors';
import type { TaskRecord } from '../../generated';
import type { Clock } from '../../lib/clock';
import type { Logger } from '../../lib/logger';
import type { Notification } from '../../states/notification';
import { ExecutorCore } from './core';
import type {
  ExecutorEffects,
  ExecutorJob,
  ExitedEvent,
  FailedEvent,
  KillSignal,
  NoticeSignal,
  SpawnSpec,
  StartedEvent,
  StopHow,
} from './effects';
import type { LaunchOptions } from './launch';
import { CallOutputFile } from './functions/call-output-file';
import { FunctionRunner } from './functions/function-runner';
import { DEFAULT_MAX_OUTPUT_BYTES } from './functions/worker/protocol';
import { ServiceRunner } from './service/service-runner';
import { readStepFailures } from './process/step-status';
import { SpawnerPool, type SpawnerHelper, type SpawnerPoolOptions } from './process/spawner-pool';
import { streamShare, type StreamLimits } from './process/spawner-pool-options';

export interface ExecutorShellOptions {
  /** Spawner helper processes. */
  spawners: number;
  logger: Logger;
  clock: Clock;
  killGraceMs: number;
  /** From launchOptionsFor (launch/options.ts). */
  launch: Partial<LaunchOptions>;
  /** ExecutorOptions.signaledExitGraceMs; default the core's. */
  signaledExitGraceMs?: number;
  /** Extra environment of the spawner helpers (hence of every task). */
  spawnerEnv?: Record<string, string>;
  helper?: SpawnerHelper;
  /** Where the spawner helpers append the output of tasks whose output streams. */
  streamDir?: string;
  /** Its output caps (SpawnerPoolOptions.streamLimits). */
  streamLimits?: StreamLimits;
  /** SpawnerPoolOptions.holdMs: how long helpers with follow-on starts queued hold events. */
  holdMs?: number;
  /** The runners cannot start tasks any more (spawner helpers keep dying): the pilot should end. */
  onUnusable?(message: string): void;
  /** Something the pilot should say it found wrong, once (function workers that cannot start). */
  onWarning?(message: string): void;
  /**
   * Per-node sub-agents (agent.subAgents): started with the Executor's event handlers; the jobs
   * of the nodes they serve go there, the rest to this process's own spawner helpers.
   */
  remote?(handlers: RemoteHandlers, adopted: RemoteJob[]): Promise<RemoteRunner>;
  /**
   * An agent started again in the allocation: the tasks the one before it had executing (its
   * journal's), each with when it was handed to the Executor (ExecutorCore.adopt).
   */
  adopt?: readonly { task: TaskRecord; since: number }[];
  /** Function tasks: warm workers (default: one per core of the agent's node), their logs' dir. */
  functions?: {
    workers: number;
    logDir: string;
    cpusOf?: (i: number) => string | undefined;
    /** The interpreter of Python function workers (agent.python). */
    python?: string;
  };
  /** Where the core's notifications, forwarded tasks and released slots go. */
  notify(notifications: Notification[]): void;
  forward(tasks: TaskRecord[]): void;
  release(tasks: TaskRecord[]): void;
}

const SIGNAL: Record<StopHow, KillSignal> = { term: 'SIGTERM', kill: 'SIGKILL' };

/** Where a job of a sub-agent's node runs (undefined: in this process's runners). */
function remoteJobOf(job: ExecutorJob): RemoteJob | undefined {
  const p = job.kind === 'process' ? job : job.kind === 'service' ? job.process : undefined;
  if (p?.node === undefined) return undefined;
  return { node: p.node, uid: p.spec.uid, attempt: p.attempt ?? 1, spec: p.spec };
}

export interface RemoteHandlers {
  started(events: StartedEvent[]): void;
  exited(events: ExitedEvent[]): void;
  failed(events: FailedEvent[]): void;
}

/** A job on a sub-agent's node, as the hub names it. */
export interface RemoteJob {
  node: string;
  uid: string;
  attempt: number;
  spec: SpawnSpec;
}

/** Where jobs on other nodes run: the per-node sub-agents' hub (src/agent/subagents). */
export interface RemoteRunner {
  serves(node: string): boolean;
  spawn(node: string, spec: SpawnSpec, attempt: number): void;
  /** false: no sub-agent runs that task. */
  kill(uid: string, signal: KillSignal): boolean;
  close(): Promise<void>;
}

/**
 * The Executor's shell: owns the runners of its jobs (the SpawnerPool for processes), performs
 * the core's effects and routes the runners' events back into the core.
 */
export class ExecutorShell implements ExecutorEffects {
  readonly core: ExecutorCore;
  private pool_!: SpawnerPool;
  private functions: FunctionRunner | undefined;
  private services: ServiceRunner | undefined;
  private remote: RemoteRunner | undefined;
  /** Service jobs for a sub-agent's node: where their spawn goes. */
  private readonly remoteServices = new Map<string, { node: string; attempt: number }>();
  /** Function calls under way (stop goes to their runner). */
  private readonly calls = new Set<string>();
  /** Running jobs that run preExec or postExec: where their status files are. */
  private readonly stepStatus = new Map<string, { prefix: string; ranks: number }>();

  private constructor(private readonly opts: ExecutorShellOptions) {
    this.core = new ExecutorCore(this, opts.clock, {
      killGraceMs: opts.killGraceMs,
      launch: opts.launch,
      ...(opts.signaledExitGraceMs === undefined
        ? {}
        : { signaledExitGraceMs: opts.signaledExitGraceMs }),
    });
  }

  /** Starts the runners (spawner helpers); resolves once they are ready. */
  static async start(opts: ExecutorShellOptions): Promise<ExecutorShell> {
    const shell = new ExecutorShell(opts);
    const poolOpts: SpawnerPoolOptions = {
      count: opts.spawners,
      logger: opts.logger,
      killGraceMs: opts.killGraceMs,
      handlers: {
        started: (evs) => shell.started(evs),
        exited: (evs) => shell.exited(evs),
        failed: (evs) => shell.failed(evs),
        unusable: (message) => opts.onUnusable?.(message),
      },
    };
    if (opts.spawnerEnv !== undefined) poolOpts.env = opts.spawnerEnv;
    if (opts.helper !== undefined) poolOpts.helper = opts.helper;
    if (opts.streamDir !== undefined) poolOpts.streamDir = opts.streamDir;
    if (opts.streamLimits !== undefined) poolOpts.streamLimits = opts.streamLimits;
    if (opts.holdMs !== undefined) poolOpts.holdMs = opts.holdMs;
    shell.pool_ = await SpawnerPool.start(poolOpts);
    // what the agent before this one ran: held again, or ended as lost (a left process killed)
    const adopted = shell.core.adopt(opts.adopt ?? []);
    const kept = adopted.kept.map(remoteJobOf).filter((j) => j !== undefined);
    const lost = adopted.lost.map(remoteJobOf).filter((j) => j !== undefined);
    if (opts.remote !== undefined) {
      try {
        const handlers = {
          started: (evs: StartedEvent[]) => shell.started(evs),
          exited: (evs: ExitedEvent[]) => shell.exited(evs),
          failed: (evs: FailedEvent[]) => shell.failed(evs),
        };
        shell.remote = await opts.remote(handlers, [...kept, ...lost]);
        for (const j of lost) shell.remote.kill(j.uid, 'SIGKILL');
      } catch (e) {
        await shell.pool_.close();
        throw e;
      }
    }
    return shell;
  }

  /** The process runner. */
  get pool(): SpawnerPool {
    return this.pool_;
  }

  /** Stops the runners: each kills what it still runs. */
  async close(): Promise<void> {
    this.services?.close();
    await Promise.all([this.pool_.close(), this.functions?.close(), this.remote?.close()]);
  }

  // ExecutorEffects

  notify(notifications: Notification[]): void {
    this.opts.notify(notifications);
  }

  forward(tasks: TaskRecord[]): void {
    this.opts.forward(tasks);
  }

  release(tasks: TaskRecord[]): void {
    this.opts.release(tasks);
  }

  start(job: ExecutorJob): void {
    switch (job.kind) {
      case 'process':
        if (job.stepStatus !== undefined) this.stepStatus.set(job.spec.uid, job.stepStatus);
        if (job.node !== undefined && this.remote?.serves(job.node) === true) {
          this.remote.spawn(job.node, job.spec, job.attempt ?? 1);
        } else this.pool_.spawn(job.spec);
        break;
      case 'function':
        this.calls.add(job.call.uid);
        (this.functions ??= this.functionRunner()).call(job.call);
        break;
      case 'service':
        if (job.process.stepStatus !== undefined) {
          this.stepStatus.set(job.process.spec.uid, job.process.stepStatus);
        }
        if (job.process.node !== undefined && this.remote?.serves(job.process.node) === true) {
          const where = { node: job.process.node, attempt: job.process.attempt ?? 1 };
          this.remoteServices.set(job.process.spec.uid, where);
        }
        (this.services ??= this.serviceRunner()).start(job);
        break;
    }
  }

  signal(uid: string, signal: NoticeSignal): void {
    // a function call runs in a shared worker: a signal there would reach other calls
    if (!this.calls.has(uid) && this.remote?.kill(uid, signal) !== true) {
      this.pool_.kill(uid, signal);
    }
  }

  stop(uid: string, how: StopHow): void {
    if (this.calls.has(uid)) this.functions?.stop(uid, how);
    else if (
      this.services?.stop(uid, how) !== true &&
      this.remote?.kill(uid, SIGNAL[how]) !== true
    ) {
      this.pool_.kill(uid, SIGNAL[how]);
    }
  }

  private serviceRunner(): ServiceRunner {
    return new ServiceRunner({
      clock: this.opts.clock,
      logger: this.opts.logger,
      spawn: (spec) => this.spawnService(spec),
      ready: (evs) => this.core.onReadyBulk(evs),
      unhealthy: (evs) => this.core.onUnhealthyBulk(evs),
      failed: (evs) => this.core.onStartFailedBulk(evs),
      exited: (evs) => this.core.onExitedBulk(evs),
    });
  }

  /** A service's process: on its node's sub-agent when it has one. */
  private spawnService(spec: SpawnSpec): void {
    const where = this.remoteServices.get(spec.uid);
    if (where === undefined || this.remote === undefined) return this.pool_.spawn(spec);
    this.remote.spawn(where.node, spec, where.attempt);
  }

  private functionRunner(): FunctionRunner {
    const f = this.opts.functions;
    const done = (events: { uid: string }[]): void => {
      for (const e of events) this.calls.delete(e.uid);
    };
    return new FunctionRunner({
      ...this.callOutput(),
      workers: f?.workers ?? 1,
      logDir: f?.logDir ?? '.',
      ...(f?.cpusOf !== undefined ? { cpusOf: f.cpusOf } : {}),
      ...(f?.python !== undefined ? { python: f.python } : {}),
      logger: this.opts.logger,
      killGraceMs: this.opts.killGraceMs,
      started: (evs) => this.started(evs),
      exited: (evs) => {
        done(evs);
        this.core.onExitedBulk(evs);
      },
      failed: (evs) => {
        done(evs);
        this.core.onStartFailedBulk(evs);
      },
      unusable: (message) => {
        this.opts.logger.error('function worker given up', { message });
        this.opts.onWarning?.(message);
      },
      cannotStart: (message) => this.opts.onWarning?.(message),
    });
  }

  /**
   * What function calls print: framed into the pilot's stream files (a file of their own, with
   * a helper's share of the disk), each call's capped at 1 MiB or the pilot's cap if lower.
   */
  private callOutput(): { output?: { file: CallOutputFile; maxOutputBytes: number } } {
    const { streamDir, streamLimits, spawners, logger } = this.opts;
    if (streamDir === undefined) return {};
    const file = new CallOutputFile({
      dir: streamDir,
      logger,
      ...streamShare(streamLimits, spawners),
    });
    const cap = Math.min(DEFAULT_MAX_OUTPUT_BYTES, streamLimits?.capBytes ?? Infinity);
    return { output: { file, maxOutputBytes: cap } };
  }

  // Runner events into the core

  private started(events: StartedEvent[]): void {
    this.core.onStartedBulk(events);
  }

  /**
   * A job that ran preExec or postExec and exited non-zero reaches the core once its status files
   * are read (which part failed); the others at once.
   */
  private exited(events: ExitedEvent[]): void {
    for (const e of events) this.remoteServices.delete(e.uid);
    if (this.services !== undefined) for (const e of events) this.services.ended(e.uid);
    if (this.stepStatus.size === 0) {
      this.core.onExitedBulk(events);
      return;
    }
    const now: ExitedEvent[] = [];
    for (const e of events) {
      const status = this.stepStatus.get(e.uid);
      if (status !== undefined) this.stepStatus.delete(e.uid);
      if (status === undefined || e.exitCode === null || e.exitCode === 0) {
        now.push(e);
        continue;
      }
      void readStepFailures(status.prefix, status.ranks)
        .then((steps) => this.core.onExitedBulk([{ ...e, steps }]))
        .catch((err: unknown) =>
          this.opts.logger.error('task exit not handled', { uid: e.uid, ...errorMeta(err) }),
        );
    }
    if (now.length > 0) this.core.onExitedBulk(now);
  }

  private failed(events: FailedEvent[]): void {
    for (const e of events) this.remoteServices.delete(e.uid);
    if (this.services !== undefined) for (const e of events) this.services.ended(e.uid);
    for (const e of events) this.stepStatus.delete(e.uid);
    this.core.onStartFailedBulk(events);
  }
}
