import { InternalError } from '../../errors';
import type { TaskRecord } from '../../generated';

/** A task's place in its lane (submission order; a record without one goes last). */
const seqOf = (t: TaskRecord): number => t.seq ?? Infinity;

/**
 * One priority's tasks in submission order (seq), with a moving head. Two parallel arrays
 * rather than an object per task (a million tasks may be queued at once): the record, and
 * when it was queued (what its waiting reason says since when), NaN once it was taken out of
 * the middle (placed past an earlier task, canceled): skipped, then dropped.
 */
class Lane {
  tasks: TaskRecord[] = [];
  since: number[] = [];
  head = 0;
  live = 0;

  insert(task: TaskRecord, since: number): void {
    const seq = seqOf(task);
    const tasks = this.tasks;
    // tasks mostly come in order; a retry goes back to its place
    if (tasks.length === this.head || seqOf(tasks[tasks.length - 1]!) <= seq) {
      tasks.push(task);
      this.since.push(since);
    } else {
      let lo = this.head;
      let hi = tasks.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (seqOf(tasks[mid]!) <= seq) lo = mid + 1;
        else hi = mid;
      }
      tasks.splice(lo, 0, task);
      this.since.splice(lo, 0, since);
    }
    this.live++;
  }

  /** Where `task` is queued here (not taken): found as insert places it, then among equal seqs. */
  indexOf(task: TaskRecord): number {
    const seq = seqOf(task);
    const tasks = this.tasks;
    let lo = this.head;
    let hi = tasks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (seqOf(tasks[mid]!) < seq) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < tasks.length && seqOf(tasks[i]!) === seq; i++) {
      if (tasks[i] === task && !Number.isNaN(this.since[i])) return i;
    }
    throw new InternalError('ready-queue-lost-task');
  }

  /** Takes `task`, found at `at` unless tasks were queued before it since (then searched). */
  takeAt(task: TaskRecord, at: number): void {
    const i = this.tasks[at] === task && !Number.isNaN(this.since[at]) ? at : this.indexOf(task);
    this.since[i] = NaN;
    this.live--;
  }

  /** Drops taken entries at the head, and the arrays' dead prefix once it is large. */
  tidy(): void {
    while (this.head < this.tasks.length && Number.isNaN(this.since[this.head])) this.head++;
    if (this.head > 1024 && this.head * 2 > this.tasks.length) {
      this.tasks = this.tasks.slice(this.head);
      this.since = this.since.slice(this.head);
      this.head = 0;
    }
  }
}

/**
 * Tasks whose dependencies are met and that wait for a pilot with room: higher priority first,
 * submission order (seq) within a priority. The scheduler walks it from the front and may take
 * a task out of the middle (one a pilot can take while an earlier one cannot go anywhere yet).
 */
export class ReadyQueue {
  private readonly lanes = new Map<number, Lane>();
  /** Priorities with a lane, highest first. */
  private order: number[] = [];
  private count = 0;
  /**
   * Queued tasks by uid, made the first time one is asked for (a cancel, explain) and kept from
   * then on: a million tasks queued at once need no map entry each until then.
   */
  private byUid: Map<string, TaskRecord> | undefined;

  get size(): number {
    return this.count;
  }

  add(task: TaskRecord, since = 0): void {
    const p = task.description.priority ?? 0;
    let lane = this.lanes.get(p);
    if (lane === undefined) {
      this.lanes.set(p, (lane = new Lane()));
      this.order = [...this.lanes.keys()].sort((a, b) => b - a);
    }
    this.byUid?.set(task.uid, task);
    this.count++;
    lane.insert(task, since);
  }

  /** A queued task and since when it is queued; undefined when it is not queued. */
  get(uid: string): { task: TaskRecord; since: number } | undefined {
    const task = this.index().get(uid);
    if (task === undefined) return undefined;
    const lane = this.laneOf(task);
    return { task, since: lane.since[lane.indexOf(task)]! };
  }

  /** Takes a task out wherever it is; undefined when it is not queued. */
  take(uid: string): TaskRecord | undefined {
    const byUid = this.index();
    const task = byUid.get(uid);
    if (task === undefined) return undefined;
    byUid.delete(uid);
    this.count--;
    const lane = this.laneOf(task);
    lane.takeAt(task, lane.indexOf(task));
    lane.tidy();
    return task;
  }

  /** Every queued task, in order, taken out. */
  takeAll(): TaskRecord[] {
    const all: TaskRecord[] = [];
    this.visit((t) => {
      all.push(t);
      return 'take';
    });
    return all;
  }

  /**
   * Calls `fn` on queued tasks in order; 'take' takes the task out, 'keep' leaves it, 'stop'
   * leaves it and ends the walk.
   */
  visit(fn: (task: TaskRecord) => 'take' | 'keep' | 'stop'): void {
    for (const p of this.order) {
      const lane = this.lanes.get(p)!;
      const { tasks, since } = lane;
      for (let i = lane.head; i < tasks.length; i++) {
        if (Number.isNaN(since[i])) continue;
        const task = tasks[i]!;
        const what = fn(task);
        if (what === 'stop') return this.tidyAll();
        if (what === 'take') {
          lane.takeAt(task, i); // fn may have queued tasks before it (a dependent let go)
          this.byUid?.delete(task.uid);
          this.count--;
        }
      }
    }
    this.tidyAll();
  }

  private laneOf(task: TaskRecord): Lane {
    return this.lanes.get(task.description.priority ?? 0)!;
  }

  private index(): Map<string, TaskRecord> {
    if (this.byUid !== undefined) return this.byUid;
    const byUid = new Map<string, TaskRecord>();
    for (const lane of this.lanes.values()) {
      for (let i = lane.head; i < lane.tasks.length; i++) {
        if (!Number.isNaN(lane.since[i])) byUid.set(lane.tasks[i]!.uid, lane.tasks[i]!);
      }
    }
    return (this.byUid = byUid);
  }

  private tidyAll(): void {
    for (const [p, lane] of this.lanes) {
      lane.tidy();
      if (lane.live === 0) {
        this.lanes.delete(p);
        this.order = this.order.filter((x) => x !== p);
      }
    }
  }
}
