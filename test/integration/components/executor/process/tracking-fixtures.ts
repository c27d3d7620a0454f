/**
 * Shared by the tests of task tracking (what a kill, the end of a task and the end of a helper
 * reach): the task that leaves processes behind (fixtures/leave-behind.sh), the pids it wrote,
 * and a `describe` for every helper and tracking this machine can run.
 */
import { describe } from '@jest/globals';
import * as path from 'node:path';
import type { SpawnerHelper } from '../../../../../src/components/executor/process/spawner-pool';
import type { TrackingKind } from '../../../../../src/components/executor/process/helper/protocol';
import {
  makeCgroupBase,
  removeTree,
} from '../../../../../src/components/executor/process/helper/task-cgroup';
import { nativeSpawner } from '../../../../../src/components/executor/process/spawner-pool';
import { pidWritten } from '../../../../support/pid-file';
import { waitForExit } from '../../../../support/processes';

/** `/bin/sh LEAVE_BEHIND exit|run`: see the script. */
export const LEAVE_BEHIND = path.join(__dirname, 'fixtures', 'leave-behind.sh');

/** What the script leaves behind, by the name of its pid file. */
export const LEFT = ['group', 'nohup', 'setsid', 'daemon'] as const;

/** The pids of what the task in `dir` left behind, once each has written its pid. */
export function leftPids(dir: string): Promise<number[]> {
  return Promise.all(LEFT.map((name) => pidWritten(dir, name)));
}

/** Resolves once every pid has exited; rejects naming the first that did not within `ms`. */
export async function allGone(pids: readonly number[], ms: number): Promise<void> {
  await Promise.all(pids.map((pid) => waitForExit(pid, ms)));
}

/** Kills what a failed test may have left (pids that are gone are ignored). */
export function killAll(pids: readonly number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

/** Whether task cgroups can be had here: a base is made and removed again. */
function cgroupsHere(): string | undefined {
  const made = makeCgroupBase();
  if ('why' in made) return made.why;
  return removeTree(made.dir)?.message;
}

const CGROUP_WHY = cgroupsHere();
const NATIVE_BUILT = nativeSpawner() !== undefined;

/**
 * `describe` for each helper (C and Node) and each tracking (cgroup, proc); those this machine
 * cannot run are skipped, saying why.
 */
export function describeEachTracking(
  title: string,
  body: (helper: SpawnerHelper, tracking: TrackingKind) => void,
): void {
  for (const helper of ['native', 'node'] as const) {
    for (const tracking of ['cgroup', 'proc'] as const) {
      const name = `${title} [${helper} helper, ${tracking} tracking]`;
      if (helper === 'native' && !NATIVE_BUILT) {
        describe.skip(`${name} (skipped: dist/native/pf-spawner not built)`, () =>
          body(helper, tracking));
      } else if (tracking === 'cgroup' && CGROUP_WHY !== undefined) {
        describe.skip(`${name} (skipped: ${CGROUP_WHY})`, () => body(helper, tracking));
      } else {
        describe(name, () => body(helper, tracking));
      }
    }
  }
}
