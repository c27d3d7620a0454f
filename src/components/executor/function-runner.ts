import { errorMeta } from '../../errors';
import type { Logger } from '../../lib/logger';
import { Unpackr } from 'msgpackr';
import type { ExitedEvent, FailedEvent, FunctionCall, StartedEvent, StopHow } from './effects';
import { FunctionPool } from './functions/function-pool';
import type { CallLost, CallOutcome, FunctionPoolOptions } from './functions/pool-types';

export interface FunctionRunnerOptions {
  workers: number;
  logger: Logger;
  /** Where the workers' output goes (`fworker.<i>.out`, `.err`): the pilot sandbox. */
  logDir: string;
  killGraceMs: number;
  cpusOf?: (i: number) => string | undefined;
  /** What the Executor hears: the same events as from the process runner. */
  started(events: StartedEvent[]): void;
  exited(events: ExitedEvent[]): void;
  failed(events: FailedEvent[]): void;
  unusable?(message: string): void;
}

/**
 * Runs function calls in the warm workers of a FunctionPool, started with the first call (a
 * pilot that runs only executables starts none), and words the pool's events as the Executor's:
 * a returned or thrown call is an exit (code 0 with its value, 1 with its error), a worker the
 * Executor killed (timeout, cancel) an exit by SIGKILL, a worker lost under the call a failure.
 */
export class FunctionRunner {
  private pool: FunctionPool | undefined;
  private starting: Promise<void> | undefined;
  /** Calls given before the pool was up, and stops asked for them meanwhile. */
  private waiting: FunctionCall[] = [];
  private closed = false;

  constructor(private readonly opts: FunctionRunnerOptions) {}

  call(job: FunctionCall): void {
    // the worker of the slot's first core; fewer workers than cores share them round
    const call = { ...job, worker: job.worker % this.opts.workers };
    if (this.pool !== undefined) return this.pool.call([call]);
    this.waiting.push(call);
    this.starting ??= this.start();
  }

  stop(uid: string, how: StopHow): void {
    if (this.pool !== undefined) return this.pool.stop(uid, how);
    // not handed to a worker yet: it ends as a stopped call would
    const i = this.waiting.findIndex((c) => c.uid === uid);
    if (i < 0) return;
    this.waiting.splice(i, 1);
    const signal = how === 'kill' ? 'SIGKILL' : 'SIGTERM';
    queueMicrotask(() => this.opts.exited([{ uid, exitCode: null, signal }]));
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.starting;
    await this.pool?.close();
  }

  private async start(): Promise<void> {
    const o = this.opts;
    const pool: FunctionPoolOptions = {
      workers: o.workers,
      logger: o.logger,
      logDir: o.logDir,
      killGraceMs: o.killGraceMs,
      handlers: {
        started: (evs) => o.started(evs),
        finished: (evs) => o.exited(evs.map(exitOf)),
        failed: (evs) => this.lost(evs),
        unusable: (message, index) => o.unusable?.(`function worker ${index}: ${message}`),
      },
    };
    if (o.cpusOf !== undefined) pool.cpusOf = o.cpusOf;
    try {
      this.pool = await FunctionPool.start(pool);
    } catch (e) {
      o.logger.error('function workers did not start', errorMeta(e));
      const message = `function workers did not start: ${(e as Error).message}`;
      o.failed(
        this.waiting.splice(0).map((c) => ({ uid: c.uid, code: 'E_WORKER_START', message })),
      );
      this.starting = undefined; // the next call tries again
      return;
    }
    if (this.closed) {
      await this.pool.close();
      return;
    }
    this.pool.call(this.waiting.splice(0));
  }

  private lost(events: CallLost[]): void {
    const exits: ExitedEvent[] = [];
    const failures: FailedEvent[] = [];
    for (const e of events) {
      // killed on the Executor's word (timeout, cancel): its reason is the Executor's
      if (e.code === 'E_WORKER_KILLED') {
        exits.push({ uid: e.uid, exitCode: null, signal: 'SIGKILL' });
      } else failures.push({ uid: e.uid, code: e.code, message: e.message });
    }
    if (exits.length > 0) this.opts.exited(exits);
    if (failures.length > 0) this.opts.failed(failures);
  }
}

/** Results as workers encode them (plain msgpack maps, functions/encodable.ts): objects back. */
const results = new Unpackr({ useRecords: false, mapsAsObjects: true });

function exitOf(o: CallOutcome): ExitedEvent {
  if (o.ok) return { uid: o.uid, exitCode: 0, signal: null, value: results.unpack(o.value) };
  const { name, message, stack } = o.error;
  const error = { name, message, phase: o.phase, ...(stack !== undefined ? { stack } : {}) };
  return { uid: o.uid, exitCode: 1, signal: null, error };
}
