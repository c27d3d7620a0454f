import * as path from 'node:path';
import type { Reason, StagingDirective, TaskRecord } from '../../generated';

/** A staging action, its default filled in. */
export type StagingAction = NonNullable<StagingDirective['action']>;

/** The schemes a staging path may carry; a path with none must be absolute. */
export const STAGING_SCHEMES = ['client', 'pilot', 'task'] as const;
export type StagingScheme = (typeof STAGING_SCHEMES)[number];

/** A staging path split: its scheme (none: absolute on the compute side) and the rest. */
export type ParsedPath = { scheme: StagingScheme | 'absolute'; rest: string } | { error: string };

/** Splits `client://a/b` into its scheme and `a/b`; names the allowed forms when it cannot. */
export function parseStagingPath(p: string): ParsedPath {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(.*)$/s.exec(p);
  if (m === null) {
    if (p.startsWith('/')) return { scheme: 'absolute', rest: p };
    return { error: `'${p}' is neither absolute nor has a scheme (${FORMS})` };
  }
  const scheme = m[1]!;
  if (!(STAGING_SCHEMES as readonly string[]).includes(scheme)) {
    return { error: `'${p}' has an unknown scheme '${scheme}://' (${FORMS})` };
  }
  return { scheme: scheme as StagingScheme, rest: m[2]! };
}

const FORMS = 'client://, pilot://, task://, task://<uid>/ or an absolute path';

/**
 * `rest` under `base`, normalized (`..` and `.` folded), keeping a trailing `/`: a target that
 * ends in `/` names a directory to put the source in.
 */
export function under(base: string, rest: string): string {
  const joined = rest === '' ? base : `${base}/${rest}`;
  const norm = path.posix.normalize(joined);
  return rest.endsWith('/') && !norm.endsWith('/') ? `${norm}/` : norm;
}

/** One directive the agent performs: paths absolute on this node, defaults filled in. */
export interface StagingStep {
  /** Its index in the task's inputStaging or outputStaging. */
  index: number;
  action: StagingAction;
  source: string;
  target: string;
  optional: boolean;
}

/** Why a step failed: the file it failed on, the errno name and its text. */
export interface StepFailure {
  index: number;
  path: string;
  errno: string;
  text: string;
}

/**
 * The agent's view of a resolved directive path (see the TaskRecord's `staging`): `pilot://`
 * under the pilot's sandbox, `task://` under the task's, an absolute path as it is. Anything
 * else (a `client://` the client left, a relative path) is an error naming the path.
 */
export function agentPath(
  p: string,
  sandboxes: { task: string; pilot: string },
): { path: string } | { error: string } {
  const parsed = parseStagingPath(p);
  if ('error' in parsed) return parsed;
  switch (parsed.scheme) {
    case 'absolute':
      return { path: under('/', parsed.rest) };
    case 'pilot':
      return { path: under(sandboxes.pilot, parsed.rest) };
    case 'task':
      return { path: under(sandboxes.task, parsed.rest) };
    case 'client':
      return { error: `'${p}' was not resolved by the client` };
  }
}

/**
 * The agent's steps for a task's input or output directives, or the first directive it cannot
 * resolve (its index and why).
 */
export function agentSteps(
  task: TaskRecord,
  which: 'input' | 'output',
  pilotSandbox: string,
): { steps: StagingStep[] } | { index: number; error: string } {
  const list = task.staging?.[which] ?? [];
  const sandboxes = { task: task.sandbox ?? '', pilot: pilotSandbox };
  const steps: StagingStep[] = [];
  for (const [index, d] of list.entries()) {
    const source = agentPath(d.source, sandboxes);
    if ('error' in source) return { index, error: source.error };
    const target = agentPath(d.target, sandboxes);
    if ('error' in target) return { index, error: target.error };
    steps.push({
      index,
      action: d.action ?? 'copy',
      source: source.path,
      target: target.path,
      optional: d.optional ?? false,
    });
  }
  return { steps };
}

/** `inputStaging[2]` or `outputStaging[0]`: how messages name a directive. */
export function directiveName(which: 'input' | 'output', index: number): string {
  return `${which}Staging[${index}]`;
}

/** How a failed step reads in a reason: directive, action as written, file, errno. */
export function failureMessage(
  task: TaskRecord,
  which: 'input' | 'output',
  f: StepFailure,
): string {
  const d = task.description[`${which}Staging`]?.[f.index];
  const what = d === undefined ? '' : ` (${d.action ?? 'copy'} ${d.source} -> ${d.target})`;
  return `${directiveName(which, f.index)}${what}: ${f.path}: ${f.text} (${f.errno})`;
}

/**
 * A failed task's reason with the output directives that failed at its agent (the record's
 * `staging.problems`) added to its detail; the agent adds them itself to a reason it knows.
 */
export function withStagingProblems(why: Reason | undefined, task: TaskRecord): Reason | undefined {
  const problems = task.staging?.problems;
  if (why === undefined || problems === undefined || problems.length === 0) return why;
  return { ...why, detail: { ...why.detail, staging: problems } };
}
