import type { TaskRecord } from '../../generated';

/** One task in line: its staging result, once it came. */
interface Place<R> {
  uid: string;
  result: R | undefined;
}

/**
 * Lets staging results through in the order their tasks arrived, so that a task staged sooner
 * (a later, smaller bulk made between the chunks of an earlier one) is not handed to the
 * scheduler, and started, ahead of tasks that came before it. The scheduler orders what waits
 * there by submission; this keeps a later task from being there, with free cores, while
 * earlier ones are still being staged.
 *
 * Only tasks put in line by `arrive` wait for their turn; any other result passes at once.
 * Each task in line must get exactly one result (or the line be cleared), else those behind it
 * wait forever. Costs one map entry per task in line.
 */
export class ArrivalOrder<R extends { uid: string }> {
  private line: (Place<R> | undefined)[] = [];
  private head = 0;
  private readonly places = new Map<string, Place<R>>();

  /** Tasks whose staging begins, in arrival order (a uid already in line keeps its place). */
  arrive(uids: Iterable<string>): void {
    for (const uid of uids) {
      if (this.places.has(uid)) continue;
      const p: Place<R> = { uid, result: undefined };
      this.places.set(uid, p);
      this.line.push(p);
    }
  }

  /**
   * Results as they come; returns those whose turn has come: the results of tasks not in line,
   * then those at the front of the line, in arrival order.
   */
  settle(results: readonly R[]): R[] {
    const out: R[] = [];
    let moved = false;
    for (const r of results) {
      const p = this.places.get(r.uid);
      if (p === undefined) out.push(r);
      else if (p.result === undefined) {
        p.result = r;
        moved = true;
      }
    }
    if (!moved) return out;
    for (let p = this.line[this.head]; p?.result !== undefined; p = this.line[this.head]) {
      out.push(p.result);
      this.places.delete(p.uid);
      this.line[this.head++] = undefined;
    }
    if (this.head === this.line.length) {
      this.line = [];
      this.head = 0;
    } else if (this.head > 1_024 && this.head * 2 > this.line.length) {
      this.line = this.line.slice(this.head);
      this.head = 0;
    }
    return out;
  }

  /** Tasks in line (their results held or still to come). */
  get waiting(): number {
    return this.places.size;
  }

  /** Forgets the line (the tasks in it were ended otherwise): later results pass at once. */
  clear(): void {
    this.line = [];
    this.head = 0;
    this.places.clear();
  }
}

/**
 * Whether a task's staging result waits for its turn: yes unless the task has input staging
 * directives. Making a sandbox is quick and bounded, so holding it back costs little; copying
 * or moving input may take long, and a pilot must not idle behind it: such a task goes on once
 * staged, and the scheduler still puts it ahead of later tasks that are waiting for slots.
 */
export function keepsOrder(task: TaskRecord): boolean {
  return (task.description.inputStaging?.length ?? 0) === 0;
}
