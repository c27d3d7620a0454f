import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import type { TaskDescription, TaskState } from '../../generated';
import { ValidationError, issuesText, type ValidationIssue } from '../../errors';
import { parseTaskDescription, parseWorkload } from '../../lib/validate';
import { TASK_STATES, isFinalTaskState } from '../../states/task-model';
import { EXIT, docPath } from '../args';
import {
  ServerError,
  addServerOptions,
  followStream,
  requestJson,
  serverErrors,
  serverOf,
  usageFailure,
  wantsServer,
  type Server,
  type ServerFlags,
  type SseEvent,
} from '../server-client';

const EXIT_STATUS = `
exit status:
  0  every task was submitted (with --wait: and every one ended DONE)
  1  the server refused a batch (the tasks of the batches before it were submitted; the
     message says which), or with --wait some task ended FAILED or CANCELED; or pilotfish
     failed (message on stderr)
  2  wrong usage, or a workload that is not JSON or not valid (each JSON path is named)
  3  with --wait: the workload's timeoutS passed before every task ended
  4  no server answers at the URL, or the service is closing

The workload and what is printed: ${docPath('cli.md')}`;

/** The most tasks one request carries (the service's limit), and bytes of JSON at most. */
export const MAX_BATCH = 10_000;
export const MAX_BATCH_BYTES = 8 * 1024 * 1024;
/** How long the service may take to take one batch. */
const SUBMIT_MS = 120_000;

interface SubmitFlags extends ServerFlags {
  json?: boolean;
  wait?: boolean;
}

/** What the service answers for each task submitted (docs/service.md, "Tasks"). */
interface TaskSummary {
  uid: string;
  state: string;
  [field: string]: unknown;
}

/** `pilotfish submit --server URL [WORKLOAD | -]`: submits tasks to a service. */
export function registerSubmit(program: Command, done: (code: number) => void): void {
  const cmd = program
    .command('submit')
    .summary('submit tasks to a pilotfish serve (a workload file, or JSON on stdin)')
    .description(
      'Submits tasks to the service at --server, in batches of at most 10,000, and prints ' +
        'their uids. The input is JSON: a task description, a list of them, or a workload file ' +
        "as pilotfish run takes ({tasks: [...]}; its pilots are the service's own). Each " +
        'description is checked before anything is sent.',
    )
    .argument('[workload]', "the JSON file ('-' or none: read stdin)")
    .usage('--server <url> [options] [workload | -]')
    .option('--json', "print the service's summary of each task: one document {tasks: [...]}")
    .option('--wait', "follow the service's events until every task submitted has ended");
  addServerOptions(cmd)
    .addHelpText('after', EXIT_STATUS)
    .action(async (file: string | undefined, opts: SubmitFlags) => {
      if (!wantsServer(opts)) {
        return done(usageFailure('submit', 'missing --server URL (or PILOTFISH_SERVER)'));
      }
      done(await serverErrors(async () => submit(serverOf(opts)!, file ?? '-', opts)));
    });
}

/** The tasks of a submit's input, and where each is in it (a JSON pointer, '' for the root). */
export interface SubmitInput {
  tasks: TaskDescription[];
  pathOf: (index: number) => string;
  /** What a workload file holds that submit does not use: 'pilots', 'store'. */
  unused: string[];
  timeoutS?: number;
}

/**
 * The tasks of a parsed input: a workload (`{tasks: [...]}`, as `pilotfish run` takes), a list
 * of task descriptions, or one. Throws a ValidationError naming every bad JSON path.
 */
export function tasksOfInput(raw: unknown): SubmitInput {
  if (Array.isArray(raw)) {
    const issues: ValidationIssue[] = [];
    raw.forEach((d, i) => {
      try {
        parseTaskDescription(d);
      } catch (e) {
        if (!(e instanceof ValidationError)) throw e;
        for (const x of e.issues) {
          issues.push({ ...x, path: `/${i}${x.path === '/' ? '' : x.path}` });
        }
      }
    });
    if (issues.length > 0) {
      throw new ValidationError(`invalid TaskDescription: ${issuesText(issues)}`, issues);
    }
    return { tasks: raw as TaskDescription[], pathOf: (i) => `/${i}`, unused: [] };
  }
  if (raw === null || typeof raw !== 'object') {
    const message =
      'must be a task description (an object), a list of them, or a workload {"tasks": [...]}';
    throw new ValidationError(`invalid input: / ${message}`, [{ path: '/', message }]);
  }
  if ('tasks' in raw) {
    const w = parseWorkload(raw);
    return {
      tasks: w.tasks,
      pathOf: (i) => `/tasks/${i}`,
      unused: (['pilots', 'store'] as const).filter((k) => w[k] !== undefined),
      ...(w.timeoutS !== undefined ? { timeoutS: w.timeoutS } : {}),
    };
  }
  return { tasks: [parseTaskDescription(raw)], pathOf: () => '', unused: [] };
}

/**
 * Splits items of these JSON sizes into batches of at most `maxCount` items and `maxBytes`
 * (an item larger alone is a batch alone): the [from, to) of each.
 */
export function batchesOf(
  sizes: readonly number[],
  maxCount = MAX_BATCH,
  maxBytes = MAX_BATCH_BYTES,
): [number, number][] {
  const out: [number, number][] = [];
  let from = 0;
  let bytes = 0;
  sizes.forEach((size, i) => {
    if (i > from && (i - from === maxCount || bytes + size > maxBytes)) {
      out.push([from, i]);
      from = i;
      bytes = 0;
    }
    bytes += size + 1;
  });
  if (sizes.length > from) out.push([from, sizes.length]);
  return out;
}

/** A refused batch's issues (`/tasks/<j>` of the body) named where they are in the input. */
export function inputIssues(
  e: ServerError,
  from: number,
  pathOf: (index: number) => string,
): ServerError {
  const issues = e.issues.map((i) => {
    const m = /^\/tasks\/(\d+)(.*)$/.exec(i.path);
    const { in: _in, ...rest } = i;
    return m === null ? i : { ...rest, path: `${pathOf(from + Number(m[1]))}${m[2]}` || '/' };
  });
  return new ServerError(e.status, e.code, e.message, issues);
}

const say = (line: string): boolean => process.stderr.write(`pilotfish submit: ${line}\n`);

async function readInput(file: string): Promise<string> {
  if (file !== '-') return readFileSync(file, 'utf8');
  const parts: Buffer[] = [];
  for await (const chunk of process.stdin) parts.push(chunk as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

async function submit(server: Server, file: string, flags: SubmitFlags): Promise<number> {
  const name = file === '-' ? 'stdin' : file;
  let input: SubmitInput;
  try {
    let raw: unknown;
    try {
      raw = JSON.parse(await readInput(file));
    } catch (e) {
      process.stderr.write(`pilotfish: cannot read ${name}: ${(e as Error).message}\n`);
      return EXIT.usage;
    }
    input = tasksOfInput(raw);
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e;
    process.stderr.write(`pilotfish: ${name}: ${e.message}\n`);
    return EXIT.usage;
  }
  if (input.unused.length > 0) {
    say(`the workload's ${input.unused.join(' and ')} are not used: the service has its own`);
  }
  const { tasks, pathOf } = input;
  const bodies = tasks.map((t) => JSON.stringify(t));
  const batches = batchesOf(bodies.map((b) => Buffer.byteLength(b)));
  const summaries: TaskSummary[] = [];
  for (const [b, [from, to]] of batches.entries()) {
    let got: { tasks: TaskSummary[] };
    try {
      got = await requestJson<{ tasks: TaskSummary[] }>(server, 'POST', '/v1/tasks', {
        body: { tasks: tasks.slice(from, to) },
        timeoutMs: SUBMIT_MS,
      });
    } catch (e) {
      const told = e instanceof ServerError ? inputIssues(e, from, pathOf) : e;
      const code = await serverErrors(() => {
        throw told;
      });
      const before =
        from > 0 ? `; the ${from} before it were${flags.json === true ? '' : ' (uids above)'}` : '';
      say(
        `batch ${b + 1} of ${batches.length} (tasks ${from} to ${to - 1} of ${name}) was not submitted${before}`,
      );
      if (flags.json === true) process.stdout.write(`${JSON.stringify({ tasks: summaries })}\n`);
      return code;
    }
    summaries.push(...got.tasks);
    if (flags.json !== true) process.stdout.write(got.tasks.map((t) => `${t.uid}\n`).join(''));
  }
  if (flags.wait !== true) {
    if (flags.json === true) process.stdout.write(`${JSON.stringify({ tasks: summaries })}\n`);
    return EXIT.ok;
  }
  const { states, timedOut } = await waitFor(server, summaries, input.timeoutS);
  const counts: Record<string, number> = {};
  for (const s of states.values()) counts[s] = (counts[s] ?? 0) + 1;
  const ordered = Object.fromEntries(
    TASK_STATES.filter((s) => counts[s] !== undefined).map((s) => [s, counts[s]!]),
  );
  if (flags.json === true) {
    process.stdout.write(`${JSON.stringify({ tasks: summaries, states: ordered })}\n`);
  }
  const line =
    Object.entries(ordered)
      .map(([s, n]) => `${s} ${n}`)
      .join(', ') || 'none';
  const n = states.size;
  const many = `${n} task${n === 1 ? '' : 's'}`;
  say(
    timedOut
      ? `the workload's timeoutS (${input.timeoutS} s) passed before its ${many} ended: ${line}`
      : `${many} ended: ${line}`,
  );
  if (timedOut) return EXIT.timeout;
  return (counts.DONE ?? 0) === states.size ? EXIT.ok : EXIT.failed;
}

/**
 * Follows GET /v1/events (from the first: a task's states are there whenever it was
 * submitted) until every task named ends, or `timeoutS` passes: each task's last state.
 */
async function waitFor(
  server: Server,
  summaries: readonly TaskSummary[],
  timeoutS: number | undefined,
): Promise<{ states: Map<string, string>; timedOut: boolean }> {
  const states = new Map(summaries.map((t) => [t.uid, t.state]));
  let open = [...states.values()].filter((s) => !isFinalTaskState(s as TaskState)).length;
  if (open === 0) return { states, timedOut: false };
  const abort = new AbortController();
  const timer =
    timeoutS === undefined ? undefined : setTimeout(() => abort.abort(), timeoutS * 1000);
  const onEvent = (e: SseEvent): boolean => {
    if (e.event !== 'task') return false;
    const n = JSON.parse(e.data) as { uid: string; state: string };
    const was = states.get(n.uid);
    if (was === undefined || isFinalTaskState(was as TaskState)) return false;
    states.set(n.uid, n.state);
    if (isFinalTaskState(n.state as TaskState)) open--;
    return open === 0;
  };
  try {
    await followStream(server, '/v1/events', onEvent, abort.signal);
  } finally {
    clearTimeout(timer);
  }
  return { states, timedOut: abort.signal.aborted };
}
