import { closeSync, existsSync, openSync, readFileSync, readSync } from 'node:fs';
import * as path from 'node:path';
import { UsageError } from '../../../errors';
import { builtNative } from '../../../lib/dist-path';
import type { Logger } from '../../../lib/logger';
import type { TrackingKind } from './helper/protocol';

// Which spawner helper the pool runs, and where its program is.

/** The C helper (dist/native/pf-spawner) or the Node one (helper/main.ts). */
export type SpawnerHelper = 'native' | 'node';

const HELPERS: readonly SpawnerHelper[] = ['native', 'node'];

/** Names the variable that picks the helper when SpawnerPoolOptions.helper is unset. */
export const SPAWNER_ENV = 'PILOTFISH_SPAWNER';

/**
 * Locates the Node helper's compiled JS, helper/main.js. From dist/ it sits below this module.
 * Under ts-jest this module runs from src/, where only helper/main.ts exists and plain node
 * cannot run it, so fall back to the build output (`npm test` builds first via "pretest";
 * rebuild after editing the helper).
 */
export function spawnerScript(dir: string = __dirname): string {
  const local = path.join(dir, 'helper', 'main.js');
  if (existsSync(local)) return local;
  const built = path.resolve(
    dir,
    '../../../../dist/src/components/executor/process/helper/main.js',
  );
  if (existsSync(built)) return built;
  throw new UsageError(`spawner helper not found at '${local}' or '${built}': run 'npm run build'`);
}

/**
 * Locates the C helper built by scripts/build-native.sh: dist/native/pf-spawner, seen from this
 * module in dist/src/components/executor/process or, under ts-jest, in
 * src/components/executor/process.
 * Undefined when it is not built, or is one for another architecture (the package's, installed
 * without its install script on another machine).
 */
export function nativeSpawner(dir: string = __dirname): string | undefined {
  const file = builtNative('pf-spawner', path.resolve(dir, '../../../..'));
  return file !== undefined && foreignMachine(file) === undefined ? file : undefined;
}

/** ELF e_machine of each process.arch (as scripts/install-native.js has it). */
const ELF_MACHINE: Partial<Record<string, number>> = {
  ia32: 3,
  arm: 40,
  ppc64: 21,
  s390x: 22,
  x64: 62,
  arm64: 183,
  riscv64: 243,
};

/** The ELF machine of `file` where it is not this one's, else undefined. */
function foreignMachine(file: string): number | undefined {
  const head = Buffer.alloc(20);
  const fd = openSync(file, 'r');
  try {
    if (readSync(fd, head, 0, 20, 0) < 20 || head.toString('latin1', 0, 4) !== '\x7fELF') {
      return undefined;
    }
  } finally {
    closeSync(fd);
  }
  const machine = head.readUInt16LE(18);
  const here = ELF_MACHINE[process.arch];
  return here !== undefined && machine !== here ? machine : undefined;
}

/**
 * Why the C helper is not there and how a user of this copy of pilotfish gets it: in a checkout
 * (src/ beside dist/) `npm run build` builds it; in an installed package its install script
 * (scripts/install-native.js) built it or wrote why not in dist/native/pf-spawner.why.
 */
export function nativeSpawnerMissing(dir: string = __dirname): { why: string; fix: string } {
  const top = path.resolve(dir, '../../../..');
  const pkg = path.basename(top) === 'dist' ? path.dirname(top) : top;
  const compiler = "install a C compiler (e.g. 'apt-get install gcc libc6-dev')";
  if (existsSync(path.join(pkg, 'src'))) {
    return {
      why: "dist/native/pf-spawner not built ('npm run build' says why)",
      fix: `${compiler}, then run 'npm run build'`,
    };
  }
  const file = path.join(pkg, 'dist/native/pf-spawner');
  const machine = existsSync(file) ? foreignMachine(file) : undefined;
  let why =
    machine === undefined
      ? 'dist/native/pf-spawner is missing from the installed package'
      : `dist/native/pf-spawner is built for another architecture (ELF machine ${machine}, this is ${process.arch}): the install script did not run`;
  try {
    why = readFileSync(path.join(pkg, 'dist/native/pf-spawner.why'), 'utf8').trim() || why;
  } catch {
    // no word from the install script: it did not run (npm --ignore-scripts) or is older
  }
  return {
    why,
    fix: `${compiler}, then run 'npm rebuild pilotfish' where pilotfish is installed (${pkg})`,
  };
}

/** The command that runs a helper of kind `helper`, or why there is none. */
export function spawnerCommand(helper: SpawnerHelper): { file: string; args: string[] } {
  if (helper === 'node') return { file: process.execPath, args: [spawnerScript()] };
  const native = nativeSpawner();
  if (native === undefined) {
    const { why, fix } = nativeSpawnerMissing();
    throw new UsageError(`no native spawner helper: ${why}; ${fix}, or use the helper 'node'`);
  }
  return { file: native, args: [] };
}

/** The helper asked for, else the native one where built, else (said in a warning) the Node one. */
export function pickHelper(opts: { helper?: SpawnerHelper }, log: Logger): SpawnerHelper {
  const asked = requestedHelper(opts);
  if (asked !== undefined) return asked;
  if (nativeSpawner() !== undefined) return 'native';
  log.warn('native spawner helper not built: using the slower Node helper', nativeSpawnerMissing());
  return 'node';
}

/** The helper asked for (option, else PILOTFISH_SPAWNER), or undefined to pick the best built. */
export function requestedHelper(opts: { helper?: SpawnerHelper }): SpawnerHelper | undefined {
  if (opts.helper !== undefined) {
    if (!HELPERS.includes(opts.helper)) {
      throw new UsageError(
        `SpawnerPool helper must be one of ${HELPERS.join(', ')}, got '${String(opts.helper)}'`,
      );
    }
    return opts.helper;
  }
  const fromEnv = process.env[SPAWNER_ENV];
  if (fromEnv === undefined || fromEnv === '') return undefined;
  if (!(HELPERS as readonly string[]).includes(fromEnv)) {
    throw new UsageError(`${SPAWNER_ENV} must be one of ${HELPERS.join(', ')}, got '${fromEnv}'`);
  }
  return fromEnv as SpawnerHelper;
}

const TRACKINGS: readonly TrackingKind[] = ['cgroup', 'proc'];

/** Names the variable that picks the task tracking when SpawnerPoolOptions.tracking is unset. */
export const TRACKING_ENV = 'PILOTFISH_TASK_TRACKING';

/**
 * The task tracking asked for (option, else PILOTFISH_TASK_TRACKING), or undefined for task
 * cgroups where the machine offers them, else /proc.
 */
export function requestedTracking(opts: { tracking?: TrackingKind }): TrackingKind | undefined {
  const asked = opts.tracking ?? process.env[TRACKING_ENV];
  if (asked === undefined || asked === '') return undefined;
  if (!(TRACKINGS as readonly string[]).includes(asked)) {
    const where = opts.tracking === undefined ? TRACKING_ENV : 'SpawnerPool tracking';
    throw new UsageError(`${where} must be one of ${TRACKINGS.join(', ')}, got '${asked}'`);
  }
  return asked as TrackingKind;
}
