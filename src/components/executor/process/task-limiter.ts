import type { SpawnRequest, SpawnSpec } from './helper/protocol';
import type { Controller } from './task-limits';

// What the SpawnerPool asks of the limits of tasks, on either cgroup hierarchy: pool-limits.ts
// (cgroup v1, and the choice) and pool-limits-v2.ts (cgroup v2).

/** What the OOM killer did to a task with a memory limit. */
export interface OomKills {
  kills: number;
  limitBytes: number;
}

/** What the pool asks of the limits of tasks, on either cgroup hierarchy. */
export interface TaskLimiter {
  /** Why limits of some controllers (or all) cannot be set here; undefined: all can. */
  readonly why: string | undefined;
  /** The controllers whose limits are set. */
  readonly controllers: Controller[];
  /** The arguments the helpers need for it. */
  helperArgs(): string[];
  /** The spawn request of `spec`, its limits turned into what the helper does with them. */
  request(spec: SpawnSpec): SpawnRequest;
  /**
   * The task ended (or never started): its OOM kills, if it had a memory limit and any;
   * `reported`: those its helper read (cgroup v2); `clean`: its helper saw nothing of it left
   * (its cgroup v2 was empty), so its cgroups here are empty too.
   */
  ended(uid: string, reported?: number, clean?: boolean): OomKills | undefined;
  /** Every helper has exited and the task cgroups are gone: give back what was made. */
  close(): Promise<void>;
}
