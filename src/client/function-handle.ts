import { coerceError, FunctionCallError, UsageError, ValidationError } from '../errors';
import {
  callArguments,
  callDescription,
  checkCallOptions,
  moduleOfHandle,
  refuseArguments,
  type FunctionCallOptions,
  type FunctionTarget,
} from './calls/function-call';
import { runtimeOf } from './runtime/runtime';
import type { Task } from './task';
import { TaskManager } from './task-manager';

export type { FunctionCallOptions } from './calls/function-call';

/** The names of a module's exports whose values are functions: what `handle` takes. */
export type FunctionExports<M> = {
  [K in keyof M]-?: M[K] extends (...args: never) => unknown ? K : never;
}[keyof M] &
  string;

/** The arguments of a call of `F` (of its last overload, for an overloaded function). */
export type CallArgs<F> = F extends (...args: infer A) => unknown ? A : never;

/** What a call of `F` resolves to: its result, awaited when it is a promise. */
export type CallResult<F> = F extends (...args: never) => infer R ? Awaited<R> : never;

/** The outcome of one call of a `mapSettled`, in the style of `Promise.allSettled`. */
export type CallSettled<R> =
  | { status: 'fulfilled'; value: R; task: string }
  | { status: 'rejected'; reason: FunctionCallError; task: string };

/** A module without a type: any export name, any arguments, results of type unknown. */
export type UntypedModule = Record<string, (...args: unknown[]) => unknown>;

/** What `functionModule` takes: the workers' language, and task options for every handle. */
export interface FunctionModuleOptions extends FunctionCallOptions {
  /** 'node' (the default) or 'python' (docs/functions.md, "Python functions"). */
  language?: 'node' | 'python';
}

/**
 * A module whose exported functions run in the pilots' warm workers, typed by the module's
 * own type `M` (`typeof import('./score')`, or an interface written for a Python module).
 */
export interface FunctionModule<M> {
  /** The module as its calls' tasks name it: an absolute path, or a Python module name. */
  readonly module: string;
  /** The language of the workers that run its calls. */
  readonly language: 'node' | 'python';
  /**
   * A handle on the export `name`, typed by its signature. `options` (merged over the
   * module's) are checked now: a ValidationError names a bad one.
   */
  handle<K extends FunctionExports<M>>(
    name: K,
    options?: FunctionCallOptions,
  ): FunctionHandle<M[K]>;
}

/**
 * Calls of one exported function, each a task of mode 'function' of the handle's TaskManager.
 * Arguments are checked before anything is submitted: one that cannot travel (a function, a
 * Map, a class instance, `undefined` in an array, a symbol, a BigInt, a cycle) rejects with a
 * ValidationError naming its place (`score: args[0].items[3] must be JSON data (a function
 * is not)`), and no task is submitted. A call whose task ends FAILED or CANCELED rejects with
 * a FunctionCallError carrying its reason; one still pending when the session closes rejects
 * with a UsageError.
 */
export interface FunctionHandle<F> {
  /** The module, as its module's `module`. */
  readonly module: string;
  /** The name of the function called: the task's `function.export`. */
  readonly export: string;
  /** The language of the workers that run its calls. */
  readonly language: 'node' | 'python';
  /** Submits one call and resolves with its result once its task is DONE. */
  call(...args: CallArgs<F>): Promise<CallResult<F>>;
  /**
   * A sweep: `calls` holds each call's arguments (`xs.map((x) => [x])`), all submitted in one
   * bulk. Resolves with the results in the order of `calls`; rejects at the first call that
   * fails (its FunctionCallError's `index` says which), the others going on.
   */
  map(calls: readonly CallArgs<F>[]): Promise<CallResult<F>[]>;
  /** As `map`, but waits for every call and resolves with each outcome, in order. */
  mapSettled(calls: readonly CallArgs<F>[]): Promise<CallSettled<CallResult<F>>[]>;
}

/**
 * A typed way to call the functions of `module` in the pilots of `tmgr` (docs/functions.md,
 * "Typed handles"):
 *
 * ```ts
 * const scoring = functionModule<typeof import('./score')>(tmgr, path.join(__dirname, 'score.js'));
 * const score = scoring.handle('score', { retries: 2 });
 * const energy = await score.call(pose); // typed by score's signature
 * ```
 *
 * `module` is a `file:` URL or an absolute path; for `language: 'python'`, also a module name
 * (`pkg.mod`). Thrown when the module or an option is not one a call can take: a
 * ValidationError naming it (nothing is submitted by making a module or a handle).
 */
export function functionModule<M = UntypedModule>(
  tmgr: TaskManager,
  module: string | URL,
  options: FunctionModuleOptions = {},
): FunctionModule<M> {
  if (!(tmgr instanceof TaskManager)) {
    throw new UsageError('functionModule: expected a TaskManager as its first argument');
  }
  const { language = 'node', ...rest } = options;
  if (language !== 'node' && language !== 'python') {
    const message = 'must be one of "node", "python"';
    throw new ValidationError(`invalid function module: /language ${message}`, [
      { path: '/language', message },
    ]);
  }
  const path = moduleOfHandle(module, language);
  // the module's own options, checked now as a call's would be: a bad one is said here
  checkCallOptions(rest, { language, module: path, export: 'module' }, path);
  return {
    module: path,
    language,
    handle: (name, more = {}) => {
      if (typeof name !== 'string' || name === '') {
        throw new ValidationError('invalid function handle: /export must be a non-empty string', [
          { path: '/export', message: 'must be a non-empty string' },
        ]);
      }
      const target: FunctionTarget = { language, module: path, export: name };
      const merged = checkCallOptions({ ...rest, ...more }, target, name);
      return new Handle(tmgr, target, merged);
    },
  };
}

class Handle<F> implements FunctionHandle<F> {
  constructor(
    private readonly tmgr: TaskManager,
    private readonly target: FunctionTarget,
    private readonly options: FunctionCallOptions,
  ) {}

  get module(): string {
    return this.target.module;
  }

  get export(): string {
    return this.target.export;
  }

  get language(): 'node' | 'python' {
    return this.target.language;
  }

  async call(...args: CallArgs<F>): Promise<CallResult<F>> {
    const checked = callArguments(args);
    if (checked.issues.length > 0) {
      refuseArguments(this.target.export, [{ index: undefined, issues: checked.issues }]);
    }
    const [task] = await this.tmgr.submitTasks([
      callDescription(this.target, this.options, checked.args),
    ]);
    const ended = await guardOf(this.tmgr).guard(this.ended(task!));
    if (ended.state !== 'DONE') throw this.failure(ended, undefined);
    return ended.result as CallResult<F>;
  }

  async map(calls: readonly CallArgs<F>[]): Promise<CallResult<F>[]> {
    const tasks = await this.submitAll(calls, 'map');
    const all = new Promise<CallResult<F>[]>((resolve, reject) => {
      const out = new Array<CallResult<F>>(tasks.length);
      let left = tasks.length;
      if (left === 0) resolve(out);
      tasks.forEach((task, i) => {
        void this.ended(task).then((t) => {
          if (t.state !== 'DONE') return reject(this.failure(t, i));
          out[i] = t.result as CallResult<F>;
          if (--left === 0) resolve(out);
        }, reject);
      });
    });
    return guardOf(this.tmgr).guard(all);
  }

  async mapSettled(calls: readonly CallArgs<F>[]): Promise<CallSettled<CallResult<F>>[]> {
    const tasks = await this.submitAll(calls, 'mapSettled');
    const all = Promise.all(
      tasks.map((task, i) =>
        this.ended(task).then((t): CallSettled<CallResult<F>> =>
          t.state === 'DONE'
            ? { status: 'fulfilled', value: t.result as CallResult<F>, task: t.uid }
            : { status: 'rejected', reason: this.failure(t, i), task: t.uid },
        ),
      ),
    );
    return guardOf(this.tmgr).guard(all);
  }

  /** Checks every call's arguments, then submits them all in one bulk (none when one is bad). */
  private async submitAll(calls: readonly unknown[], what: string): Promise<Task[]> {
    const name = `${this.target.export}.${what}`;
    if (!Array.isArray(calls)) {
      throw new ValidationError(`${name}: / must be an array of argument lists`, [
        { path: '/', message: 'must be an array of argument lists' },
      ]);
    }
    const descs = [];
    const bad: Parameters<typeof refuseArguments>[1] = [];
    for (let i = 0; i < calls.length; i++) {
      const args: unknown = calls[i];
      if (!Array.isArray(args)) {
        const message = "must be an array: the call's arguments";
        bad.push({ index: i, issues: [{ path: '/', message, where: 'args' }] });
        continue;
      }
      const checked = callArguments(args);
      if (checked.issues.length > 0) {
        bad.push({ index: i, issues: checked.issues });
      } else if (bad.length === 0) {
        descs.push(callDescription(this.target, this.options, checked.args));
      }
    }
    if (bad.length > 0) refuseArguments(name, bad);
    if (descs.length === 0) return [];
    return this.tmgr.submitTasks(descs);
  }

  /** The task once final: the manager's own wait, indexed by task (calls/waiters.ts). */
  private ended(task: Task): Promise<Task> {
    return this.tmgr.waitTasks({ uids: [task.uid] }).then(() => task);
  }

  private failure(task: Task, index: number | undefined): FunctionCallError {
    const state = task.state === 'CANCELED' ? 'CANCELED' : 'FAILED';
    return new FunctionCallError(this.target.export, task.uid, state, task.reason, index);
  }
}

/**
 * The calls of a TaskManager's handles still pending, rejected as its session closes (before
 * its pilots go: what they would report no longer reaches the manager).
 */
class CloseGuard {
  private readonly pending = new Set<(e: Error) => void>();
  /** Set as the session closes: a call guarded later (its submit was under way) ends at once. */
  private closed: UsageError | undefined;

  constructor(tmgr: TaskManager) {
    const rt = runtimeOf(tmgr);
    rt.atClose(() => {
      const e = (this.closed = new UsageError(`session ${rt.uid} closed before the call ended`));
      for (const reject of this.pending) reject(e);
      this.pending.clear();
      return Promise.resolve();
    });
  }

  guard<T>(p: Promise<T>): Promise<T> {
    if (this.closed !== undefined) return Promise.reject(this.closed);
    return new Promise<T>((resolve, reject) => {
      this.pending.add(reject);
      p.then(
        (v) => {
          this.pending.delete(reject);
          resolve(v);
        },
        (e: unknown) => {
          this.pending.delete(reject);
          reject(coerceError(e));
        },
      );
    });
  }
}

const guards = new WeakMap<TaskManager, CloseGuard>();

function guardOf(tmgr: TaskManager): CloseGuard {
  let g = guards.get(tmgr);
  if (g === undefined) guards.set(tmgr, (g = new CloseGuard(tmgr)));
  return g;
}
