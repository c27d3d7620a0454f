import { coerceError, TimeoutError } from '../../../errors';
import type { Logger } from '../../../lib/logger';
import { Unpackr } from 'msgpackr';
import type { ExitedEvent, FailedEvent, FunctionCall, StartedEvent, StopHow } from '../effects';
import type { CallOutputFile, PrintedCall } from './call-output-file';
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
  /** Over the agent's environment, for every worker (FunctionPoolOptions.env). */
  env?: Record<string, string>;
  /**
   * Where what calls print goes, framed per task (the pilot's stream files), and the most one
   * call may print (FunctionPoolOptions.maxOutputBytes). Without them it goes to the workers'
   * log files.
   */
  output?: { file: CallOutputFile; maxOutputBytes: number };
  /** What the Executor hears: the same events as from the process runner. */
  started(events: StartedEvent[]): void;
  exited(events: ExitedEvent[]): void;
  failed(events: FailedEvent[]): void;
  /** A worker index was given up (its replacements keep failing to start). */
  unusable?(message: string): void;
  /** A language's workers cannot start: said once per language, with the calls' reason. */
  cannotStart?(message: string): void;
}

/** The pool of one language: started with its first call. */
interface LanguagePool {
  pool: FunctionPool | undefined;
  starting: Promise<void> | undefined;
  /** Calls given before the pool was up. */
  waiting: FunctionCall[];
  /**
   * Why its workers cannot start, once they did not: every call of the language fails with it,
   * for the rest of the pilot (a broken interpreter or environment stays broken).
   */
  broken?: string;
}

/**
 * Runs function calls in the warm workers of a FunctionPool per language (Node, Python), each
 * started with the first call of its language (a pilot that runs only executables starts none),
 * with the same number of workers and the same pinning; and words the pools' events as the
 * Executor's: a returned or thrown call is an exit (code 0 with its value, 1 with its error), a
 * worker the Executor killed (timeout, cancel) an exit by SIGKILL, a worker lost under the call
 * a failure. A language's pool is started once per pilot: if it cannot start, every call of the
 * language fails E_WORKER_START with why (said once: cannotStart). What calls print (`output`)
 * is framed into the pilot's stream files, its tails put in their exits.
 */
export class FunctionRunner {
  private readonly node: LanguagePool = { pool: undefined, starting: undefined, waiting: [] };
  private readonly python: LanguagePool = { pool: undefined, starting: undefined, waiting: [] };
  private closed = false;
  /** Calls failed inside call() (a broken language): delivered on a later turn, in one bulk. */
  private soon: FailedEvent[] = [];

  constructor(private readonly opts: FunctionRunnerOptions) {}

  call(job: FunctionCall): void {
    // the worker of the slot's first core; fewer workers than cores share them round
    const call = { ...job, worker: job.worker % this.opts.workers };
    const lang = job.language === 'python' ? this.python : this.node;
    if (lang.pool !== undefined) return lang.pool.call([call]);
    if (lang.broken !== undefined) return this.failSoon(job.uid, lang.broken);
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
    this.opts.output?.file.close();
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
        finished: (evs) => o.exited(this.exits(evs)),
        failed: (evs) => this.lost(evs),
        unusable: (message, index) =>
          o.unusable?.(`${language} function worker ${index}: ${message}`),
      },
    };
    if (o.cpusOf !== undefined) pool.cpusOf = o.cpusOf;
    if (o.python !== undefined) pool.python = o.python;
    if (o.env !== undefined) pool.env = o.env;
    if (o.output !== undefined) pool.maxOutputBytes = o.output.maxOutputBytes;
    try {
      lang.pool = await FunctionPool.start(pool);
    } catch (e) {
      const message = cannotStart(language, o.python, e);
      const failed = lang.waiting.splice(0);
      if (slowStart(e)) {
        // a start too slow (a loaded node) says nothing of the interpreter: the next call tries
        o.logger.warn('function workers did not start in time', { language, why: message });
        lang.starting = undefined;
      } else {
        // once: the same interpreter and environment would fail the same way for every call
        lang.broken = message;
        o.logger.error('function workers cannot start', { language, why: message });
        o.cannotStart?.(message);
      }
      if (failed.length > 0) o.failed(failed.map((c) => workerStart(c.uid, message)));
      return;
    }
    if (this.closed) {
      await lang.pool.close();
      return;
    }
    lang.pool.call(lang.waiting.splice(0));
  }

  /** The outcomes as exits; what the calls printed framed into the stream file, tails in them. */
  private exits(outcomes: CallOutcome[]): ExitedEvent[] {
    const exits = outcomes.map(exitOf);
    const file = this.opts.output?.file;
    if (file === undefined) return exits;
    let printed: PrintedCall[] | undefined;
    for (let i = 0; i < outcomes.length; i++) {
      const p = outcomes[i]!.printed;
      const exit = exits[i]!;
      if (p !== undefined) (printed ??= []).push({ uid: exit.uid, printed: p, exit });
    }
    if (printed !== undefined) file.take(printed);
    return exits;
  }

  private failSoon(uid: string, message: string): void {
    if (this.soon.length === 0) {
      setImmediate(() => {
        const failed = this.soon;
        this.soon = [];
        this.opts.failed(failed);
      });
    }
    this.soon.push(workerStart(uid, message));
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

function workerStart(uid: string, message: string): FailedEvent {
  return { uid, code: 'E_WORKER_START', message };
}

/** Why the workers of `language` cannot start, and what to do, as the calls' reason says it. */
function cannotStart(language: 'node' | 'python', python: string | undefined, e: unknown): string {
  const why = coerceError(e).message.trimEnd();
  if (language === 'node') return `node function workers cannot start: ${why}`;
  return (
    `python function workers cannot start (agent.python '${python ?? 'python3'}'): ${why}. ` +
    'Every Python function task of this pilot fails: give agent.python an interpreter that ' +
    'has msgpack, e.g. a virtual environment\'s (docs/functions.md, "Giving the workers a ' +
    'virtual environment")'
  );
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

/** Whether a failed start was only too slow (no worker said why it could not start). */
function slowStart(e: unknown): boolean {
  return e instanceof TimeoutError || /did not get ready within/.test(coerceError(e).message);
}
