import * as path from 'node:path';
import { UsageError } from '../../../errors';
import type { Logger } from '../../../lib/logger';
import type { TrackingKind } from './helper/protocol';
import { killProcesses, sweep, type SweepTarget } from './helper/kill-session';
import { requestedTracking } from './spawner-command';
import { makeCgroupBase, removeCgroupTree } from './helper/task-cgroup';

// The SpawnerPool's part of task tracking (helper/tracking.ts has the helpers' part): it picks
// the tracking, makes the base cgroup its helpers work under, and ends what a helper that died
// left running, which the helper can no longer do.

/** How long the pool waits for a killed cgroup to empty before it gives up removing it. */
const EMPTY_TIMEOUT_MS = 5_000;

/** A task of a helper: its main pid (once started) and whether it is signaled alone (srun). */
export interface PoolTask {
  pid: number | undefined;
  processOnly: boolean;
}

/** What one helper said in its ready event. */
export interface HelperTracking {
  kind: TrackingKind;
  markPrefix: string;
}

export class PoolTracking {
  private constructor(
    /** What was asked (option or PILOTFISH_TASK_TRACKING); undefined: the best available. */
    readonly asked: TrackingKind | undefined,
    /** The pool's base cgroup, when task cgroups are used. */
    readonly base: string | undefined,
    private readonly log: Logger,
    /** Why there is no base. */
    readonly why?: string,
  ) {}

  /**
   * Decides the tracking: task cgroups where the machine offers them (or where asked; then
   * their absence is an error), else /proc.
   */
  static choose(opts: { tracking?: TrackingKind }, log: Logger): PoolTracking {
    const asked = requestedTracking(opts);
    if (asked === 'proc') {
      return new PoolTracking(asked, undefined, log, "tracking 'proc' was asked");
    }
    const made = makeCgroupBase();
    if ('dir' in made) return new PoolTracking(asked, made.dir, log);
    if (asked === 'cgroup') throw new UsageError(`task cgroups cannot be used: ${made.why}`);
    log.info('no task cgroups: the processes of tasks are tracked through /proc', {
      why: made.why,
    });
    return new PoolTracking(asked, undefined, log, made.why);
  }

  /** The helper's arguments: its base cgroup, if any, and the kill grace. */
  args(killGraceMs: number): string[] {
    const grace = ['--kill-grace-ms', String(killGraceMs)];
    return this.base === undefined ? grace : [...grace, '--cgroup', this.base];
  }

  /**
   * A helper is ready: it cannot use the cgroups it was given (`why`). An error where cgroups
   * were asked for, else a warning.
   */
  refused(pid: number, why: string): Error | undefined {
    const message = `spawner helper (pid ${pid}) cannot use task cgroups: ${why}`;
    if (this.asked === 'cgroup') return new UsageError(message);
    this.log.warn('spawner helper tracks tasks through /proc', { pid, why });
    return undefined;
  }

  /**
   * A helper died: SIGKILL what its tasks run and left, as the helper would have. srun tasks
   * get it alone (their shepherds end their steps); the rest through the helper's cgroup, or
   * through their sessions and the helper's marks.
   */
  helperDied(pid: number, tracking: HelperTracking | undefined, tasks: PoolTask[]): void {
    const started = tasks.filter((t) => t.pid !== undefined);
    const alone = started.filter((t) => t.processOnly).map((t) => t.pid!);
    const errors = killProcesses(alone, 'SIGKILL');
    if (tracking?.kind === 'cgroup' && this.base !== undefined) {
      const home = path.join(this.base, String(pid));
      void removeCgroupTree(home, EMPTY_TIMEOUT_MS).then((left) => {
        if (left !== undefined) {
          this.log.warn('cannot remove the cgroup of a dead helper', { left });
        }
      });
    } else {
      const targets: SweepTarget[] = started
        .filter((t) => !t.processOnly)
        .map((t) => ({ sid: t.pid!, group: true, signal: 'SIGKILL' }));
      if (tracking !== undefined) {
        targets.push({
          group: false,
          mark: tracking.markPrefix,
          markPrefix: true,
          signal: 'SIGKILL',
        });
      }
      errors.push(...sweep(targets).errors);
    }
    for (const message of errors) {
      this.log.warn('cannot kill a task of a dead spawner helper', { pid, message });
    }
  }

  /** Every helper has exited: remove the base and whatever a helper killed late left in it. */
  async close(): Promise<void> {
    if (this.base === undefined) return;
    const left = await removeCgroupTree(this.base, EMPTY_TIMEOUT_MS);
    if (left !== undefined) this.log.warn('cannot remove the task cgroups', { left });
  }
}
