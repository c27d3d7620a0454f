import type { TaskRecord, WaitReason } from '../../generated';
import { COMPONENTS } from '../../states/task-model';
import { slotOf, type Hold } from './slots';

/** The pilot's agent.launchers when its description gives none. */
export const DEFAULT_LAUNCHERS = 64;

/** The pilot's cap on launcher processes, and which tasks start one. */
export interface LauncherLimit {
  /** The most tasks that need a launcher running at once (agent.launchers; default 64). */
  max?: number | undefined;
  /**
   * Whether a task, placed (its `slots` set), starts a launcher process (srun, mpirun) that
   * lives as long as it runs. The agent builds it from its launch options (launch/registry.ts
   * needsLauncher), so which tasks need one is decided in one place.
   */
  needs: (task: TaskRecord) => boolean;
}

/**
 * Launchers in use: the running tasks that hold one. A placed task that needs one starts only
 * while fewer than `max` run; else it waits, its slots given back, until one of them ends
 * (AgentSchedulerCore: its shape waits in ShapeBlocking.waitForLauncher). Pure.
 */
export class Launchers {
  readonly max: number;
  private readonly holders = new Set<string>();

  constructor(private readonly limit: LauncherLimit) {
    this.max = limit.max ?? DEFAULT_LAUNCHERS;
  }

  get inUse(): number {
    return this.holders.size;
  }

  /** Whether the placed task may start now; one that needs a launcher takes it. */
  admit(task: TaskRecord): boolean {
    if (!this.limit.needs(task)) return true;
    if (this.holders.size >= this.max) return false;
    this.holders.add(task.uid);
    return true;
  }

  /** Whether running task `uid` holds a launcher. */
  holds(uid: string): boolean {
    return this.holders.has(uid);
  }

  /** Whether a waiting task would need a launcher on `holds` (for plans: nothing is taken). */
  wouldNeed(task: TaskRecord, holds: readonly Hold[]): boolean {
    return this.limit.needs({ ...task, slots: holds.map(slotOf) });
  }

  /** Task `uid` ended; true when it gave a launcher back. */
  release(uid: string): boolean {
    return this.holders.delete(uid);
  }

  /** Why a task that needs a launcher waits (it asks `asks` per rank). */
  reason(asks: NonNullable<WaitReason['asks']>, now: number): WaitReason {
    const inUse = this.holders.size;
    return {
      kind: 'launchers',
      message:
        `waiting for a launcher: ${inUse} of ${this.max} in use (the pilot's agent.launchers: ` +
        'tasks started by srun or mpirun that run at once)',
      component: COMPONENTS.agentScheduler,
      ts: now,
      asks,
      launchers: { inUse, limit: this.max },
    };
  }
}
