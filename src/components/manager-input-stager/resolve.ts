import { posix } from 'node:path';
import type { StagingDirective, TaskRecord } from '../../generated';
import { directiveName, parseStagingPath, under } from '../shared/staging-paths';

/** What only the client knows, for resolving a task's staging directives. */
export interface StagingLookup {
  /** The client's working directory: `client://rel` is relative to it. */
  clientCwd: string;
  /**
   * A task of the session by uid, for `task://<uid>/...`: undefined when no task has that uid
   * (the path is then this task's own), its `sandbox` undefined while it has none yet.
   */
  taskOf(uid: string): { readonly sandbox: string | undefined } | undefined;
  /** A task's record came back saying where it ran (known here before the store tells). */
  ranIn(uid: string, sandbox: string): void;
}

/** A lookup that knows no other task (until the session gives its registry). */
export function cwdOnlyLookup(clientCwd: string): StagingLookup {
  return { clientCwd, taskOf: () => undefined, ranIn: () => undefined };
}

type Which = 'input' | 'output';

/**
 * The task's directives in the forms its agent understands (the TaskRecord's `staging`):
 * `client://` and another task's `task://<uid>/` made absolute, `pilot://` and this task's
 * `task://` kept, defaults filled in. Undefined when the task has no directives; an error
 * naming the first directive that cannot be resolved.
 */
export function resolveStaging(
  task: TaskRecord,
  lookup: StagingLookup,
): { staging?: NonNullable<TaskRecord['staging']> } | { error: string } {
  const { inputStaging = [], outputStaging = [] } = task.description;
  if (inputStaging.length === 0 && outputStaging.length === 0) return {};
  const input: StagingDirective[] = [];
  const output: StagingDirective[] = [];
  for (const [which, list, out] of [
    ['input', inputStaging, input],
    ['output', outputStaging, output],
  ] as const) {
    for (const [index, d] of list.entries()) {
      const r = resolveDirective(task, d, which, lookup);
      if ('error' in r) return { error: `${directiveName(which, index)}: ${r.error}` };
      out.push(r);
    }
  }
  return { staging: { input, output } };
}

/**
 * RADICAL-Pilot's defaults for a path without a scheme that is not absolute: an input's source
 * and an output's target are on the client side (`client://`, from its working directory), an
 * input's target and an output's source in the task's own directory (`task://`).
 */
export function withRelativeDefaults(
  d: StagingDirective,
  which: Which,
  uid: string,
): StagingDirective {
  const [clientEnd, taskEnd] =
    which === 'input' ? (['source', 'target'] as const) : (['target', 'source'] as const);
  const out = { ...d };
  if (isRelative(d[clientEnd])) out[clientEnd] = `client://${d[clientEnd]}`;
  // named by its uid: a first part that is another task's uid still means this task's
  if (isRelative(d[taskEnd])) out[taskEnd] = `task://${uid}/${d[taskEnd]}`;
  return out;
}

function isRelative(p: string): boolean {
  return !p.startsWith('/') && !/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(p);
}

function resolveDirective(
  task: TaskRecord,
  written: StagingDirective,
  which: Which,
  lookup: StagingLookup,
): StagingDirective | { error: string } {
  const d = withRelativeDefaults(written, which, task.uid);
  const action = d.action ?? 'copy';
  if (action === 'transfer') {
    // bytes go between the client and the compute side: each end must be on its side
    const [clientEnd, computeEnd] =
      which === 'input' ? (['source', 'target'] as const) : (['target', 'source'] as const);
    if (!d[clientEnd].startsWith('client://')) {
      return { error: `a transfer's ${clientEnd} must be a client:// path, not '${d[clientEnd]}'` };
    }
    if (d[computeEnd].startsWith('client://')) {
      return {
        error: `a transfer's ${computeEnd} must be on the compute side, not '${d[computeEnd]}'`,
      };
    }
  }
  const source = resolvePath(task, d.source, lookup);
  if ('error' in source) return source;
  const target = resolvePath(task, d.target, lookup);
  if ('error' in target) return target;
  // "into this client folder": named in full here, as the file the task is allowed to write
  if (action === 'transfer' && which === 'output' && target.path.endsWith('/')) {
    target.path += posix.basename(source.path);
  }
  return { source: source.path, target: target.path, action, optional: d.optional ?? false };
}

function resolvePath(
  task: TaskRecord,
  p: string,
  lookup: StagingLookup,
): { path: string } | { error: string } {
  const parsed = parseStagingPath(p);
  if ('error' in parsed) return parsed;
  const { scheme, rest } = parsed;
  switch (scheme) {
    case 'absolute':
    case 'pilot':
      return { path: p };
    case 'client':
      return { path: rest.startsWith('/') ? under('/', rest) : under(lookup.clientCwd, rest) };
    case 'task': {
      const slash = rest.indexOf('/');
      const first = slash < 0 ? rest : rest.slice(0, slash);
      const after = slash < 0 ? '' : rest.slice(slash + 1);
      if (first === task.uid) return { path: `task://${after}` };
      const other = first === '' ? undefined : lookup.taskOf(first);
      if (other === undefined) return { path: p };
      if (other.sandbox === undefined) {
        return { error: `'${p}': task ${first} has no sandbox yet (it has not run)` };
      }
      return { path: under(other.sandbox, after) };
    }
  }
}
