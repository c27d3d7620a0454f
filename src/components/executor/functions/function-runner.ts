import { errorMeta } from '../../../errors';
import type { Logger } from '../../../lib/logger';
import { Unpackr } from 'msgpackr';
import type { ExitedEvent, FailedEvent, FunctionCall, StartedEvent, StopHow } from '../effects';
import { FunctionPool } from './function-pool';
import type { CallLost, CallOutcome, FunctionPoolOptions } from './pool-types';

export interface FunctionRunnerOptions {
  workers: number;
  logger: Logger;
  /** Where the workers' output goes (`fworker.<i>.out`, `.err`): the pilot sandbox. */
  logDir: string;
  killGraceMs: number;
  cpusOf?: (i: number) => string | undefined;
  /** The interpreter of Python workers (agent.python); default python3. */
  python?: string;
  /** What the Executor hears: the same events as from the process runner. */
  started(events: StartedEvent[]): void;
  exited(events: ExitedEvent[]): void;
  failed(events: FailedEvent[]): void;
  unusable?(message: string): void;
}

/** The pool of one language: started with its first call. */
interface LanguagePool {
  pool: FunctionPool | undefined;
  starting: Promise<void> | undefined;
  /** Calls given before the pool was up. */
  waiting: FunctionCall[];
}

/**
 * Runs function calls in the warm workers of a FunctionPool per language (Node, Python), each
 * started with the first call of its language (a pilot that runs only executables starts none),
 * with the same number of workers and the same pinning; and words the pools' events as the
 * Executor's: a returned or thrown call is an exit (code 0 with its value, 1 with its error), a
 * worker the Executor killed (timeout, cancel) an exit by SIGKILL, a worker lost under the call
 * a failure.
 */
export class FunctionRunner {
  private readonly node: LanguagePool = { pool: undefined, starting: undefined, waiting: [] };
  private readonly python: LanguagePool = { pool: undefined, starting: undefined, waiting: [] };
  private closed = false;

  constructor(private readonly opts: FunctionRunnerOptions) {}

  call(job: FunctionCall): void {
    // the worker of the slot's first core; fewer workers than cores share them round
    const call = { ...job, worker: job.worker % this.opts.workers };
    const lang = job.language === 'python' ? this.python : this.node;
    if (lang.pool !== undefined) return lang.pool.call([call]);
    lang.waiting.push(call);
    lang.starting ??= this.start(lang, job.language ?? 'node');
  }

  stop(uid: string, how: StopHow): void {
    // a pool ignores a uid it does not run
    this.node.pool?.stop(uid, how);
    this.python.pool?.stop(uid, how);
    for (const lang of [this.node, this.python]) {
      // not handed to a worker yet: it ends as a stopped call would
      const i = lang.waiting.findIndex((c) => c.uid === uid);
      if (i < 0) continue;
      lang.waiting.splice(i, 1);
      const signal = how === 'kill' ? 'SIGKILL' : 'SIGTERM';
      queueMicrotask(() => this.opts.exited([{ uid, exitCode: null, signal }]));
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(
      [this.node, this.python].map(async (lang) => {
        await lang.starting;
        await lang.pool?.close();
      }),
    );
  }

  private async start(lang: LanguagePool, language: 'node' | 'python'): Promise<void> {
    const o = this.opts;
    const pool: FunctionPoolOptions = {
      workers: o.workers,
      language,
      logger: o.logger,
      logDir: o.logDir,
      killGraceMs: o.killGraceMs,
      handlers: {
        started: (evs) => o.started(evs),
        finished: (evs) => o.exited(evs.map(exitOf)),
        failed: (evs) => this.lost(evs),
        unusable: (message, index) =>
          o.unusable?.(`${language} function worker ${index}: ${message}`),
      },
    };
    if (o.cpusOf !== undefined) pool.cpusOf = o.cpusOf;
    if (o.python !== undefined) pool.python = o.python;
    try {
      lang.pool = await FunctionPool.start(pool);
    } catch (e) {
      o.logger.error('function workers did not start', { language, ...errorMeta(e) });
      const message = `${language} function workers did not start: ${(e as Error).message}`;
      o.failed(
        lang.waiting.splice(0).map((c) => ({ uid: c.uid, code: 'E_WORKER_START', message })),
      );
      lang.starting = undefined; // the next call tries again
      return;
    }
    if (this.closed) {
      await lang.pool.close();
      return;
    }
    lang.pool.call(lang.waiting.splice(0));
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

/** Results as workers encode them (plain msgpack maps, worker/encodable.ts): objects back. */
const results = new Unpackr({ useRecords: false, mapsAsObjects: true });

/** msgpack nil: what a function that returns nothing returns (most do). */
const NIL = 0xc0;

function exitOf(o: CallOutcome): ExitedEvent {
  if (o.ok) {
    const v = o.value;
    const value: unknown = v.length === 1 && v[0] === NIL ? null : results.unpack(v);
    return { uid: o.uid, exitCode: 0, signal: null, value };
  }
  const { name, message, stack } = o.error;
  const error = { name, message, phase: o.phase, ...(stack !== undefined ? { stack } : {}) };
  return { uid: o.uid, exitCode: 1, signal: null, error };
}
