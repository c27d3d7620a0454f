/* Generated from schemas/wait-reason.schema.json by scripts/gen-types.js: do not edit. */

/**
 * Why a waiting task has not started yet, as the component that holds it reports it: one line for people in `message`, the facts beside it.
 */
export interface WaitReason {
  /**
   * pilot: no pilot it may use is added, active, or has room; dependencies: tasks named in `after` have not ended (or are not ready); resources: no node has the cores, GPUs or memory free now; reservation: the free capacity is held for an earlier task (backfill without starvation); tag: an exclusive or colocate tag keeps it off the free nodes; launchers: it starts a launcher process (srun, mpirun) and the pilot's agent.launchers run already; queued: in transit between components, or being placed.
   */
  kind: 'pilot' | 'dependencies' | 'resources' | 'reservation' | 'tag' | 'launchers' | 'queued';
  /**
   * The reason in one line.
   */
  message: string;
  /**
   * The component that holds the task and keeps the reason current.
   */
  component: string;
  /**
   * When the holder found this reason (epoch ms).
   */
  ts: number;
  /**
   * kind pilot: the pilots it waits for (none when no pilot is added).
   */
  pilots?: string[];
  /**
   * kind dependencies: the dependencies not met yet.
   *
   * Items: One dependency not met yet.
   */
  dependencies?: {
    /**
     * The uid of the dependency.
     */
    task: string;
    /**
     * The `after` condition.
     */
    on: 'done' | 'final' | 'failed' | 'ready';
    /**
     * end: it has not ended yet; ready: the service has not reported ready yet.
     */
    waitsFor: 'end' | 'ready';
    /**
     * Its state as the client knows it (filled by explain).
     */
    state?: string;
  }[];
  /**
   * kinds resources, reservation, tag: what it asks per rank (all ranks on one node for a colocated task).
   */
  asks?: {
    /**
     * Ranks of the task.
     */
    ranks: number;
    /**
     * Cores per rank.
     */
    cores: number;
    /**
     * GPUs per rank; below 1 a share of one GPU.
     */
    gpus: number;
    /**
     * MiB of memory per rank.
     */
    memMb: number;
  };
  /**
   * kind resources: the node it may use with the most free cores now, and what is free there.
   */
  largestFree?: {
    /**
     * The node.
     */
    node: string;
    /**
     * Free cores there.
     */
    cores: number;
    /**
     * Whole GPUs free.
     */
    gpus: number;
    /**
     * Free MiB of memory there.
     */
    memMb: number;
  };
  /**
   * kind reservation: the task the free capacity is held for.
   */
  behind?: string;
  /**
   * kind tag: the tag that keeps it waiting.
   */
  tag?: {
    /**
     * The exclusive tag whose nodes it is kept off (another tag than its own, if it has one).
     */
    exclusive?: string;
    /**
     * Its colocate tag: it must run on the node the tag's running tasks hold.
     */
    colocate?: string;
  };
  /**
   * kind tag: tasks that hold the tag's nodes now (the first few).
   */
  holders?: string[];
  /**
   * kinds reservation and tag: the nodes it is kept off (the first few).
   */
  nodes?: string[];
  /**
   * kind launchers: the tasks that hold a launcher now, and the pilot's agent.launchers.
   */
  launchers?: {
    /**
     * Launcher tasks running on the pilot now.
     */
    inUse: number;
    /**
     * The most that run at once (agent.launchers).
     */
    limit: number;
  };
  /**
   * Agent reasons: the first waiting task that asks the same; a later one waits behind it.
   */
  ahead?: string;
}
