/**
 * The runner of function tasks: a fixed set of warm worker processes (one per slot), each
 * bound to its slot's cores (taskset) and environment (GPUs), fed calls in bulks over the
 * protocol of worker/protocol.ts (docs/function-workers.md), whose results come back in bulks.
 *
 * A worker that dies is replaced at once, at the same index with the same binding, so the pool
 * never shrinks: the call it was running fails (E_WORKER_DIED, with the end of its stderr), and
 * the calls it had not started go to its replacement. Where it may have held finished calls'
 * results (sent at the end of a batch), which call it was running is not known: the unanswered
 * ones run again in the replacement one at a time, and the one that kills it is the one. Only a worker that cannot start (it dies
 * or stays silent before it is ready, MAX_START_FAILURES times in a row) gives its index up:
 * its calls fail with E_WORKER_START and `unusable` says so.
 *
 * stop(uid, 'term') asks the worker to cancel the call: it answers at once with a `Canceled`
 * error (finished, ok false). stop(uid, 'kill') SIGKILLs the worker running the call: it is
 * replaced, and the call fails with E_WORKER_KILLED (signal SIGKILL). A call that has not
 * started (waiting in the pool, or queued in its worker behind another) is taken back instead
 * and finishes with a `Canceled` error, for either.
 */
import { UsageError } from '../../../errors';
import { withTimeout } from '../../../lib/deferred';
import type { Logger } from '../../../lib/logger';
import { PoolEvents } from './pool-events';
import {
  MAX_START_FAILURES,
  type CallLost,
  type CallLostCode,
  type CallOutcome,
  type CallStarted,
  type FunctionCallJob,
  type FunctionPoolOptions,
} from './pool-types';
import { PoolWorker, type Call, type WorkerHooks } from './pool-worker';
import { DEFAULT_MAX_RESULT_BYTES } from './worker/protocol';
import { spawnWorker, stderrTail, workerCommand, type WorkerCommand } from './worker-process';

export * from './pool-types';

export class FunctionPool {
  private readonly workers: (PoolWorker | undefined)[] = [];
  /** Why index i was given up. */
  private readonly givenUp: (string | undefined)[] = [];
  private readonly startFailures: number[] = [];
  private readonly calls = new Map<string, Call>();
  private nextId = 1;
  private readonly dirty = new Set<PoolWorker>();
  private flushQueued = false;
  private closing: Promise<void> | undefined;
  /** start() resolved: a worker that dies is replaced (before, the start fails instead). */
  private up = false;
  private readonly limits: { maxResultBytes: number; maxOutputBytes: number };
  private readonly log: Logger;
  private readonly events: PoolEvents;
  private readonly hooks: WorkerHooks;

  private constructor(
    private readonly opts: FunctionPoolOptions,
    private readonly command: WorkerCommand,
  ) {
    this.log = opts.logger;
    this.events = new PoolEvents(opts.handlers, opts.logger);
    this.limits = {
      maxResultBytes: opts.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES,
      maxOutputBytes: opts.maxOutputBytes ?? 0,
    };
    this.hooks = {
      log: opts.logger,
      ready: (w) => this.onReady(w),
      finished: (w, outcomes) => {
        this.onFinished(outcomes);
        if (w.pending[0]?.suspect === true) this.markDirty(w); // the next suspect, alone
      },
      closed: (w, code, signal) => this.onClose(w, code, signal),
    };
  }

  /** Starts `workers` workers; resolves once every one is ready (else closes and throws). */
  static async start(opts: FunctionPoolOptions): Promise<FunctionPool> {
    if (!Number.isInteger(opts.workers) || opts.workers < 1) {
      throw new UsageError(`FunctionPool workers must be an integer >= 1, got ${opts.workers}`);
    }
    const pool = new FunctionPool(opts, workerCommand(opts.language, opts.python));
    if (opts.cpusOf !== undefined && pool.command.taskset === undefined) {
      opts.logger.warn('function workers not pinned to their cores: taskset not found', {
        fix: 'install util-linux',
      });
    }
    for (let i = 0; i < opts.workers; i++) pool.launch(i, []);
    const ready = Promise.all(pool.workers.map((w) => w!.readyWait.promise));
    try {
      await withTimeout(ready, pool.startTimeoutMs + 1_000, 'function workers start');
    } catch (e) {
      await pool.close();
      throw e;
    }
    pool.up = true;
    pool.log.info('function workers started', {
      count: opts.workers,
      language: opts.language ?? 'node',
      pids: pool.pids(),
      script: pool.command.script,
    });
    return pool;
  }

  /** Worker indices alive or being replaced: the pool's size until an index is given up. */
  get size(): number {
    return this.opts.workers - this.givenUp.filter((g) => g !== undefined).length;
  }

  /** The pid of each worker (-1 for an index given up). */
  pids(): number[] {
    return this.workers.map((w) => w?.p.pid ?? -1);
  }

  /** Calls given and not yet ended. */
  running(): number {
    return this.calls.size;
  }

  call(jobs: FunctionCallJob[]): void {
    for (const job of jobs) {
      if (this.calls.has(job.uid)) {
        this.log.error('function call already running ignored', { taskId: job.uid });
        continue;
      }
      const w = this.workers[job.worker];
      if (this.closing !== undefined || w === undefined) {
        const code = this.closing !== undefined ? 'E_POOL_CLOSED' : this.missing(job.worker);
        this.events.failedSoon({ uid: job.uid, code, message: this.whyNot(job.worker) });
        continue;
      }
      const call: Call = { job, id: this.nextId++ };
      this.calls.set(job.uid, call);
      w.pending.push(call);
      this.markDirty(w);
    }
  }

  /** See the file's comment; a uid with nothing running is ignored. */
  stop(uid: string, how: 'term' | 'kill'): void {
    const call = this.calls.get(uid);
    if (call === undefined) return;
    const w = call.sentTo;
    if (w === undefined || w.running !== call) {
      this.takeBack(call);
    } else if (how === 'term') {
      w.cancel(call.id);
      this.markDirty(w);
    } else if (w.killedFor === undefined) {
      w.killedFor = call.id;
      w.kill();
    }
  }

  /**
   * Ends every worker: closes the request pipes (a worker exits when its pipe ends), SIGKILLs
   * after killGraceMs those still there (a function that does not yield). Calls not ended fail
   * with E_POOL_CLOSED. Resolves when every worker has exited.
   */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private get startTimeoutMs(): number {
    return this.opts.startTimeoutMs ?? 10_000;
  }

  private async shutdown(): Promise<void> {
    const live = this.workers.filter((w): w is PoolWorker => w?.alive === true);
    for (const w of live) w.end();
    const all = Promise.all(live.map((w) => w.closed.promise));
    try {
      await withTimeout(all, this.opts.killGraceMs, 'function workers exit');
    } catch {
      for (const w of live) if (w.alive) w.kill();
      await all;
    }
    const message = 'the function pool was closed';
    const code: CallLostCode = 'E_POOL_CLOSED';
    const lost = [...this.calls.keys()].map((uid) => ({ uid, code, message }));
    this.calls.clear();
    this.events.deliver([], [], lost);
  }

  /** Starts worker `index`, which takes over the calls `pending` for the index. */
  private launch(index: number, pending: Call[]): void {
    const cpus = this.opts.cpusOf?.(index);
    const p = spawnWorker(this.command, {
      index,
      logDir: this.opts.logDir,
      logName: this.opts.language === 'python' ? 'fworker-python' : 'fworker',
      env: { ...process.env, ...this.opts.env, ...this.opts.envOf?.(index) },
      ...(cpus === undefined ? {} : { cpus }),
    });
    this.workers[index] = new PoolWorker(
      index,
      p,
      this.limits,
      this.startTimeoutMs,
      this.hooks,
      pending,
    );
  }

  private onReady(w: PoolWorker): void {
    this.startFailures[w.index] = 0;
    if (w.pending.length > 0) this.markDirty(w);
  }

  private onFinished(outcomes: CallOutcome[]): void {
    for (const o of outcomes) this.calls.delete(o.uid);
    this.events.deliver([], outcomes, []);
  }

  /** The worker exited and its pipes are drained: settle its calls, then replace it. */
  private onClose(w: PoolWorker, exitCode: number | null, signal: string | null): void {
    this.dirty.delete(w);
    const how = `${howEnded(exitCode, signal)}${w.why === undefined ? '' : `: ${w.why}`}`;
    const tail = w.ready && this.closing !== undefined ? '' : stderrTail(w.p);
    const said = `(${how})${tail === '' ? '' : `; its stderr ends:\n${tail}`}`;
    // why it did not start (a Python without msgpack says so on stderr) reaches the task
    w.readyWait.reject(new Error(`function worker ${w.index} exited before it was ready ${said}`));
    // while the pool starts, it has no calls: its start fails, no worker is started again
    if (this.closing !== undefined || !this.up) return;
    const failed: CallLost[] = [];
    const unanswered = [...w.inflight.values()];
    // The first unanswered call is the one it ran, unless it had finished some after it whose
    // results it held (it sends those at the end of a batch; a worker that exits sends them
    // first, one killed by a signal cannot): then the calls run again, alone, and the one that
    // kills a worker then is the one (a call that finished may thus run twice; none is failed
    // for another's crash).
    const known =
      unanswered.length <= 1 ||
      unanswered[0]!.suspect === true ||
      w.killedFor !== undefined ||
      signal === null;
    const first = known ? unanswered.shift() : undefined;
    if (first !== undefined) {
      this.calls.delete(first.job.uid);
      failed.push(lostCall(w, first, exitCode, signal, said));
    }
    for (const c of unanswered) {
      delete c.sentTo;
      if (!known) c.suspect = true;
    }
    const pending = [...unanswered, ...w.pending];
    if (!w.ready) {
      this.startFailures[w.index] = (this.startFailures[w.index] ?? 0) + 1;
      if (this.startFailures[w.index]! >= MAX_START_FAILURES) {
        const why = `function worker ${w.index} failed to start ${MAX_START_FAILURES} times, the last ${said}`;
        this.giveUp(w.index, why, pending, failed);
        return;
      }
    }
    this.log.warn('function worker replaced', {
      index: w.index,
      dead: w.p.pid,
      how,
      lostCalls: failed.length,
    });
    this.events.deliver([], [], failed);
    this.launch(w.index, pending);
  }

  private giveUp(index: number, why: string, pending: Call[], failed: CallLost[]): void {
    this.givenUp[index] = why;
    this.workers[index] = undefined;
    this.log.error('function worker cannot start: its index is given up', { index, why });
    for (const c of pending) {
      this.calls.delete(c.job.uid);
      failed.push({ uid: c.job.uid, code: 'E_WORKER_START', message: why });
    }
    this.events.deliver([], [], failed);
    this.events.unusable(why, index);
  }

  /** A call that has not started ends Canceled, at once (on a later turn). */
  private takeBack(call: Call): void {
    const sentTo = call.sentTo;
    if (sentTo !== undefined) {
      sentTo.inflight.delete(call.id);
      sentTo.cancel(call.id);
      this.markDirty(sentTo);
    } else {
      const w = this.workers[call.job.worker];
      const i = w?.pending.indexOf(call) ?? -1;
      if (i >= 0) w!.pending.splice(i, 1);
    }
    this.calls.delete(call.job.uid);
    const error = { name: 'Canceled', message: 'the call was canceled before it started' };
    this.events.finishedSoon({ uid: call.job.uid, ok: false, error, phase: 'call' });
  }

  private markDirty(w: PoolWorker): void {
    this.dirty.add(w);
    if (this.flushQueued) return;
    this.flushQueued = true;
    queueMicrotask(() => this.flush());
  }

  /** Every write of this turn: one per worker, its cancels and then its new calls. */
  private flush(): void {
    this.flushQueued = false;
    const started: CallStarted[] = [];
    for (const w of this.dirty) w.flush(started);
    this.dirty.clear();
    this.events.deliver(started, [], []);
  }

  private missing(index: number): CallLostCode {
    return this.givenUp[index] !== undefined ? 'E_WORKER_START' : 'E_NO_SUCH_WORKER';
  }

  private whyNot(index: number): string {
    if (this.closing !== undefined) return 'the function pool is closed';
    return (
      this.givenUp[index] ??
      `no function worker ${index}: the pool has workers 0 to ${this.workers.length - 1}`
    );
  }
}

function howEnded(exitCode: number | null, signal: string | null): string {
  return signal !== null ? `killed by ${signal}` : `exit code ${exitCode}`;
}

/** The call the worker was running when it died: killed as asked (stop 'kill'), or lost. */
function lostCall(
  w: PoolWorker,
  call: Call,
  exitCode: number | null,
  signal: string | null,
  said: string,
): CallLost {
  const base = { uid: call.job.uid, pid: w.p.pid, exitCode, signal };
  const worker = `the function worker ${w.index} (pid ${w.p.pid})`;
  if (w.killedFor === call.id) {
    return {
      ...base,
      code: 'E_WORKER_KILLED',
      message: `${worker} running the call was killed as asked`,
    };
  }
  return {
    ...base,
    code: 'E_WORKER_DIED',
    message: `${worker} died while it ran the call ${said}`,
  };
}
