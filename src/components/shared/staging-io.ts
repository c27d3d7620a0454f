import { promises as fsp, type Stats } from 'node:fs';
import * as path from 'node:path';
import { errnoOf, errnoText } from '../../lib/errno-text';
import { PRIVATE_DIR, PRIVATE_FILE, PRIVATE_SCRIPT } from '../../lib/private-files';
import type { StagingStep, StepFailure } from './staging-paths';
import type { Transfers } from './transfers';

/** How a step ended: done, skipped (an optional source is missing), or failed. */
export type StepOutcome = 'done' | 'skipped' | StepFailure;

/**
 * Performs a task's steps in order. Input staging stops at the first failure (the task fails
 * anyway); output staging (`all`) performs every step, so as much comes back as can.
 */
export async function performSteps(
  uid: string,
  steps: readonly StagingStep[],
  direction: 'input' | 'output',
  transfers: Transfers | undefined,
  all: boolean,
): Promise<StepFailure[]> {
  const failures: StepFailure[] = [];
  for (const step of steps) {
    const outcome = await performStep(uid, step, direction, transfers);
    if (typeof outcome === 'string') continue;
    failures.push(outcome);
    if (!all) break;
  }
  return failures;
}

/** One directive on real files: see docs/staging.md for what each action does. */
export async function performStep(
  uid: string,
  step: StagingStep,
  direction: 'input' | 'output',
  transfers: Transfers | undefined,
): Promise<StepOutcome> {
  const failAs = (file: string, errno: string, text: string): StepFailure => ({
    index: step.index,
    path: file,
    errno,
    text,
  });
  // a file system error names the file it failed on; else the one we were at
  const fail = (e: unknown, file: string): StepFailure => {
    const at = (e as { path?: unknown } | null)?.path;
    const errno = errnoOf(e);
    return failAs(typeof at === 'string' ? at : file, errno, errnoText(errno, e));
  };
  const fetching = step.action === 'transfer' && direction === 'input';
  // the source is on this node except for a transfer's fetch, whose source is the client's
  let stats: Stats | undefined;
  if (!fetching) {
    try {
      stats = await fsp.stat(step.source);
    } catch (e) {
      if (step.optional && errnoOf(e) === 'ENOENT') return 'skipped';
      return fail(e, step.source);
    }
  }
  let target = step.target;
  try {
    if (step.action === 'transfer') {
      if (transfers === undefined) {
        return failAs(step.source, 'ENOTSUP', NO_TRANSFER);
      }
      if (fetching) {
        target = await placeTarget(step.source, step.target);
        await transfers.fetch(uid, step.source, target);
      } else {
        if (stats!.isDirectory()) {
          return failAs(step.source, 'EISDIR', NO_DIRECTORIES);
        }
        // the client's side is not ours to look at: only a trailing '/' says "into"
        if (target.endsWith('/')) target += path.basename(step.source);
        await transfers.send(uid, step.source, target);
      }
      return 'done';
    }
    target = await placeTarget(step.source, step.target);
    await clearTarget(target);
    switch (step.action) {
      case 'copy':
        await copy(step.source, target, stats!);
        break;
      case 'link':
        await fsp.symlink(step.source, target);
        break;
      case 'move':
        await move(step.source, target, stats!);
        break;
    }
    return 'done';
  } catch (e) {
    if (fetching && step.optional && errnoOf(e) === 'ENOENT') return 'skipped';
    return fail(e, target);
  }
}

const NO_TRANSFER = 'transfer is not available on this pilot';
const NO_DIRECTORIES = 'transfer sends files, not directories';

/**
 * Where the source goes: inside `target` when it ends in `/` or is a directory already (under
 * the source's name), else `target` itself. Missing parents are made, the owner's alone.
 */
async function placeTarget(source: string, target: string): Promise<string> {
  const name = path.basename(source);
  if (target.endsWith('/')) {
    await fsp.mkdir(target, { recursive: true, mode: PRIVATE_DIR });
    return path.join(target, name);
  }
  const st = await fsp.stat(target).catch(() => undefined);
  if (st?.isDirectory() === true) return path.join(target, name);
  await fsp.mkdir(path.dirname(target), { recursive: true, mode: PRIVATE_DIR });
  return target;
}

/**
 * An existing target that is not a directory is replaced: removed first, so that writing it
 * never goes through a link (e.g. one an earlier `link` made to the client's own file).
 */
async function clearTarget(target: string): Promise<void> {
  const st = await fsp.lstat(target).catch(() => undefined);
  if (st !== undefined && !st.isDirectory()) await fsp.unlink(target);
}

/** A file or a directory tree; what is made is the owner's alone, executables stay so. */
async function copy(source: string, target: string, st: Stats): Promise<void> {
  if (st.isDirectory()) return copyTree(source, target);
  if (!st.isFile()) throw notCopyable(source);
  await fsp.copyFile(source, target);
  await fsp.chmod(target, fileMode(st));
}

async function copyTree(source: string, target: string): Promise<void> {
  await fsp.mkdir(target, { recursive: true, mode: PRIVATE_DIR });
  await fsp.chmod(target, PRIVATE_DIR);
  for (const entry of await fsp.readdir(source, { withFileTypes: true })) {
    const from = path.join(source, entry.name);
    const to = path.join(target, entry.name);
    if (entry.isSymbolicLink()) {
      // a link inside a tree is copied as the link (as cp -R does)
      await clearTarget(to);
      await fsp.symlink(await fsp.readlink(from), to);
    } else if (entry.isDirectory()) {
      await copyTree(from, to);
    } else {
      await clearTarget(to);
      await copy(from, to, await fsp.stat(from));
    }
  }
}

/** A rename; across file systems, a copy then the source removed. */
async function move(source: string, target: string, st: Stats): Promise<void> {
  try {
    await fsp.rename(source, target);
  } catch (e) {
    if (errnoOf(e) !== 'EXDEV') throw e;
    await copy(source, target, st);
    await fsp.rm(source, { recursive: true, force: true });
  }
}

function fileMode(st: Stats): number {
  return (st.mode & 0o100) !== 0 ? PRIVATE_SCRIPT : PRIVATE_FILE;
}

function notCopyable(file: string): Error {
  return Object.assign(new Error(`${file} is not a regular file or directory`), {
    code: 'EINVAL',
    path: file,
  });
}

/** Tasks whose file work runs at once in a shell; each task's own steps go in order. */
export const STAGING_CONCURRENCY = 8;

/**
 * Performs each task's steps under `limiter` and reports every task as it is done. Never
 * rejects: an unexpected error becomes the failure of the task's first step.
 */
export function stageEach(
  work: readonly { uid: string; steps: readonly StagingStep[] }[],
  opts: {
    limiter: { run<T>(job: () => Promise<T>): Promise<T> };
    direction: 'input' | 'output';
    transfers: Transfers | undefined;
    all: boolean;
  },
  report: (uid: string, failures: StepFailure[]) => void,
): void {
  for (const w of work) {
    const job = (): Promise<StepFailure[]> =>
      performSteps(w.uid, w.steps, opts.direction, opts.transfers, opts.all).catch((e) => [
        {
          index: w.steps[0]?.index ?? 0,
          path: w.steps[0]?.source ?? '',
          errno: errnoOf(e),
          text: errnoText(errnoOf(e), e),
        },
      ]);
    void opts.limiter.run(job).then((failures) => report(w.uid, failures));
  }
}
