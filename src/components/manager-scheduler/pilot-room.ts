/**
 * A pilot as the ManagerScheduler sees it: its size, whether its agent is up, and what it was
 * given that has not come back. Late binding (as RADICAL-Pilot's backfilling scheduler does): a
 * task goes to a pilot only when that pilot is active and has room for it, so a pilot still
 * queued in a batch system never holds tasks another pilot could run now.
 */
export class PilotRoom {
  active = false;
  /** Cores and GPUs of the tasks bound to it and not yet back or ended. */
  boundCores = 0;
  boundGpus = 0;

  constructor(
    readonly uid: string,
    public cores: number,
    public gpus: number,
  ) {}

  /** Whether the task could run here at all (its whole size at once). */
  fitsEver(cores: number, gpus: number): boolean {
    return cores <= this.cores && gpus <= this.gpus;
  }

  /**
   * Room: what it runs plus a backlog that keeps its agent fed across the round trip to the
   * client (its own size again, at least 64 cores and 8 GPUs), so short tasks do not leave it
   * idle and long ones do not pile up on it.
   */
  hasRoom(cores: number, gpus: number): boolean {
    return (
      this.boundCores + cores <= this.cores + Math.max(this.cores, 64) &&
      (gpus === 0 || this.boundGpus + gpus <= this.gpus + Math.max(this.gpus, 8))
    );
  }

  /** How full it is (0: nothing bound), to spread tasks over pilots. */
  load(): number {
    return this.boundCores / Math.max(1, this.cores);
  }

  bind(cores: number, gpus: number): void {
    this.boundCores += cores;
    this.boundGpus += gpus;
  }

  release(cores: number, gpus: number): void {
    this.boundCores = Math.max(0, this.boundCores - cores);
    this.boundGpus = Math.max(0, this.boundGpus - gpus);
  }
}

/** The cores and GPUs a task asks, over all its ranks. */
export function sizeOf(d: { ranks?: number; coresPerRank?: number; gpusPerRank?: number }): {
  cores: number;
  gpus: number;
} {
  const ranks = d.ranks ?? 1;
  return { cores: ranks * (d.coresPerRank ?? 1), gpus: ranks * (d.gpusPerRank ?? 0) };
}
