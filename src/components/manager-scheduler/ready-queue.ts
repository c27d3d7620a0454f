import type { TaskRecord } from '../../generated';

interface Entry {
  task: TaskRecord;
  /** When it was queued (what its waiting reason says since when). */
  since: number;
  /** Taken out of the middle (placed past an earlier task, canceled): skipped, then dropped. */
  taken: boolean;
}

/** One priority's tasks in submission order (seq), with a moving head. */
class Lane {
  items: Entry[] = [];
  head = 0;
  live = 0;

  insert(e: Entry): void {
    const seq = e.task.seq ?? Infinity;
    const items = this.items;
    // tasks mostly come in order; a retry goes back to its place
    if (items.length === this.head || (items[items.length - 1]!.task.seq ?? Infinity) <= seq) {
      items.push(e);
    } else {
      let lo = this.head;
      let hi = items.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if ((items[mid]!.task.seq ?? Infinity) <= seq) lo = mid + 1;
        else hi = mid;
      }
      items.splice(lo, 0, e);
    }
    this.live++;
  }

  /** Drops taken entries at the head, and the array's dead prefix once it is large. */
  tidy(): void {
    while (this.head < this.items.length && this.items[this.head]!.taken) this.head++;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
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
   * Entries by uid, made the first time one is asked for (a cancel, explain) and kept from then
   * on: a million tasks queued at once need no map entry each until then.
   */
  private byUid: Map<string, Entry> | undefined;

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
    const e: Entry = { task, since, taken: false };
    this.byUid?.set(task.uid, e);
    this.count++;
    lane.insert(e);
  }

  /** A queued task and since when it is queued; undefined when it is not queued. */
  get(uid: string): { task: TaskRecord; since: number } | undefined {
    return this.index().get(uid);
  }

  /** Takes a task out wherever it is; undefined when it is not queued. */
  take(uid: string): TaskRecord | undefined {
    const byUid = this.index();
    const e = byUid.get(uid);
    if (e === undefined) return undefined;
    byUid.delete(uid);
    this.count--;
    e.taken = true;
    const lane = this.lanes.get(e.task.description.priority ?? 0)!;
    lane.live--;
    lane.tidy();
    return e.task;
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
      const items = lane.items;
      for (let i = lane.head; i < items.length; i++) {
        const e = items[i]!;
        if (e.taken) continue;
        const what = fn(e.task);
        if (what === 'stop') return this.tidyAll();
        if (what === 'take') {
          e.taken = true;
          this.byUid?.delete(e.task.uid);
          this.count--;
          lane.live--;
        }
      }
    }
    this.tidyAll();
  }

  private index(): Map<string, Entry> {
    if (this.byUid !== undefined) return this.byUid;
    const byUid = new Map<string, Entry>();
    for (const p of this.order) {
      const lane = this.lanes.get(p)!;
      for (let i = lane.head; i < lane.items.length; i++) {
        const e = lane.items[i]!;
        if (!e.taken) byUid.set(e.task.uid, e);
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
