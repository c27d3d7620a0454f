/**
 * A pilot as the ManagerScheduler sees it: its size, whether its agent is up, and what it was
 * given that has not come back. Late placement (as RADICAL-Pilot's backfilling scheduler does): a
 * task goes to a pilot only when that pilot is active and has room for it, so a pilot still
 * queued in a batch system never holds tasks another pilot could run now.
 */
export class PilotRoom {
  active = false;
  /** Cores and GPUs of the tasks given to it and not yet back or ended. */
  heldCores = 0;
  heldGpus = 0;

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
      this.heldCores + cores <= this.cores + Math.max(this.cores, 64) &&
      (gpus === 0 || this.heldGpus + gpus <= this.gpus + Math.max(this.gpus, 8))
    );
  }

  /** How full it is (0: nothing held), to spread tasks over pilots. */
  load(): number {
    return this.heldCores / Math.max(1, this.cores);
  }

  take(cores: number, gpus: number): void {
    this.heldCores += cores;
    this.heldGpus += gpus;
  }

  giveBack(cores: number, gpus: number): void {
    this.heldCores = Math.max(0, this.heldCores - cores);
    this.heldGpus = Math.max(0, this.heldGpus - gpus);
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
