import { isAbsolute } from 'node:path';
import { fileURLToPath } from 'node:url';
import { issuesText, ValidationError, type ValidationIssue } from '../../errors';
import type { TaskDescription } from '../../generated';
import { plainDataIssues } from '../../lib/plain-data';
import { parseTaskDescription } from '../../lib/validate';

/**
 * What a function handle's calls take of a task description: their slot, limits, place and
 * staging. Each call is a task with these fields; `mode`, `function` and `uid` are the handle's
 * own, and what does not apply to a call (`executable`, `ranks`, `launch`, ...) is left out.
 */
export type FunctionCallOptions = Pick<
  TaskDescription,
  | 'name'
  | 'labels'
  | 'environment'
  | 'workdir'
  | 'sandbox'
  | 'coresPerRank'
  | 'gpusPerRank'
  | 'gpuIndices'
  | 'memPerRankMb'
  | 'priority'
  | 'timeoutS'
  | 'walltimeS'
  | 'retries'
  | 'pilot'
  | 'tags'
  | 'placement'
  | 'inputStaging'
  | 'outputStaging'
>;

/** Every field of FunctionCallOptions (the type makes the list whole), checked at run time. */
const CALL_OPTIONS: { readonly [K in keyof FunctionCallOptions]-?: true } = {
  name: true,
  labels: true,
  environment: true,
  workdir: true,
  sandbox: true,
  coresPerRank: true,
  gpusPerRank: true,
  gpuIndices: true,
  memPerRankMb: true,
  priority: true,
  timeoutS: true,
  walltimeS: true,
  retries: true,
  pilot: true,
  tags: true,
  placement: true,
  inputStaging: true,
  outputStaging: true,
};

/** The fields of FunctionCallOptions, in the order the docs list them. */
export const CALL_OPTION_KEYS: readonly string[] = Object.keys(CALL_OPTIONS);

/** Where a function's code is found and the language of its workers. */
export interface FunctionTarget {
  language: 'node' | 'python';
  /** The module as a task names it: an absolute path (node), or a path or module name (python). */
  module: string;
  export: string;
}

const PYTHON_MODULE = /^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$/;

/**
 * The module of a handle as its tasks name it: a `file:` URL (a URL object or its text) becomes
 * its path; a path must be absolute. A Python module may be a module name (`pkg.mod`) instead.
 * Throws a ValidationError at `/module` naming what is allowed: a relative path or a package
 * name would be resolved on the pilot's node from each call's working directory, which a handle
 * does not know; an `https:` or `data:` URL is not loaded by the workers.
 */
export function moduleOfHandle(module: unknown, language: 'node' | 'python'): string {
  const allowed =
    language === 'python'
      ? 'a file: URL, an absolute path of a .py file or a module name (pkg.mod)'
      : "a file: URL (new URL('./score.js', import.meta.url)) or an absolute path (path.join(__dirname, 'score.js'))";
  const refuse = (why: string): never => {
    const message = `must be ${allowed}: ${why}`;
    throw new ValidationError(`invalid function module: /module ${message}`, [
      { path: '/module', message },
    ]);
  };
  let text: string;
  if (module instanceof URL) text = module.href;
  else if (typeof module === 'string') text = module;
  else return refuse(`got ${module === null ? 'null' : typeof module}`);
  const scheme = /^([A-Za-z][A-Za-z\d+.-]+):/.exec(text)?.[1];
  if (scheme !== undefined) {
    if (scheme.toLowerCase() !== 'file') return refuse(`${scheme}: URLs are not loaded`);
    try {
      return fileURLToPath(text);
    } catch (e) {
      return refuse(e instanceof Error ? e.message : String(e));
    }
  }
  if (isAbsolute(text)) return text;
  if (language === 'python' && PYTHON_MODULE.test(text)) return text;
  return refuse(`'${text}' is relative (or a package name), resolved where each call runs`);
}

/**
 * Checks a handle's task options once, when it is made: only the keys of FunctionCallOptions,
 * as plain data, with values the task schema takes (a sample call's description is validated,
 * so `/coresPerRank must be >= 1` is said here, not at each call). Throws a ValidationError.
 */
export function checkCallOptions(
  options: unknown,
  target: FunctionTarget,
  what: string,
): FunctionCallOptions {
  const fail = (issues: ValidationIssue[]): never => {
    throw new ValidationError(`invalid options of ${what}: ${issuesText(issues)}`, issues);
  };
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    return fail([{ path: '/', message: 'must be an object' }]);
  }
  const unknownKeys = Object.keys(options).filter((k) => !CALL_OPTION_KEYS.includes(k));
  if (unknownKeys.length > 0) {
    const list = CALL_OPTION_KEYS.join(', ');
    return fail(
      unknownKeys.map((k) => ({
        path: `/${k}`,
        message: `is not an option of a function handle (allowed: ${list})`,
      })),
    );
  }
  // its keys are FunctionCallOptions' (above); the schema checks their values
  const sample = callDescription(target, options, []);
  const notPlain = plainDataIssues(sample);
  if (notPlain.length > 0) return fail(notPlain);
  try {
    parseTaskDescription(sample);
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e;
    return fail(e.issues);
  }
  return options;
}

/** The description of one call (options first: the handle's fields win). */
export function callDescription(
  target: FunctionTarget,
  options: FunctionCallOptions,
  args: unknown[],
): TaskDescription {
  const fn: NonNullable<TaskDescription['function']> = {
    module: target.module,
    export: target.export,
    args,
  };
  if (target.language === 'python') fn.language = 'python';
  return { ...options, mode: 'function', function: fn };
}

/**
 * A call's arguments as they travel, or why they cannot: trailing `undefined`s are dropped (a
 * function sees `f(x, undefined)` as `f(x)`), then each argument must be what the task's
 * arguments may hold (src/lib/plain-data.ts, the check submit applies: JSON data, bytes and
 * valid dates, non-finite numbers). Each issue's path is a JSON pointer into the arguments
 * (`/0/items/3`) and its `where` the same as JavaScript writes it (`args[0].items[3]`).
 */
export function callArguments(args: readonly unknown[]): {
  args: unknown[];
  issues: (ValidationIssue & { where: string })[];
} {
  let end = args.length;
  while (end > 0 && args[end - 1] === undefined) end--;
  const kept = args.slice(0, end);
  const issues = plainDataIssues({ args: kept }, { args: true }).map((i) => {
    const path = i.path.slice('/args'.length) || '/';
    return { path, message: i.message, where: jsPath(kept, path, 'args') };
  });
  return { args: kept, issues };
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/**
 * A JSON pointer into `root` as JavaScript writes the access (`args[0].items[3]`,
 * `args[1]["a b"]`): the value is walked along the pointer so an array index is told from an
 * object key that is a number.
 */
export function jsPath(root: unknown, pointer: string, name: string): string {
  let out = name;
  let at: unknown = root;
  if (pointer === '/') return out;
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(at)) out += `[${key}]`;
    else out += IDENTIFIER.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
    at = typeof at === 'object' && at !== null ? (at as Record<string, unknown>)[key] : undefined;
  }
  return out;
}

/**
 * Throws a ValidationError for the arguments of calls that cannot travel (`calls` gives each
 * call's index in a map, else undefined for one call): its issues are JSON pointers into what
 * was passed (a call's arguments, or a map's list of them), its message names each place as
 * JavaScript writes it (`score: args[0].items[3] must be JSON data (a function is not)`).
 */
export function refuseArguments(
  what: string,
  bad: { index: number | undefined; issues: ReturnType<typeof callArguments>['issues'] }[],
): never {
  const issues: ValidationIssue[] = [];
  const shown: ValidationIssue[] = [];
  for (const { index, issues: found } of bad) {
    for (const i of found) {
      const at = index === undefined ? '' : `/${index}`;
      issues.push({ path: `${at}${i.path === '/' ? '' : i.path}` || '/', message: i.message });
      shown.push({
        path: index === undefined ? i.where : `call ${index}: ${i.where}`,
        message: i.message,
      });
    }
  }
  throw new ValidationError(`${what}: ${issuesText(shown)}`, issues);
}
