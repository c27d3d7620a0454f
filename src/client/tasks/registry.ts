import type { TaskDescription } from '../../generated';
import { isFinalTaskState, type FinalTaskState } from '../../states/task-model';
import { Interner } from '../../lib/strings';
import type { Task } from '../task';

/**
 * The session's tasks by uid, across all its TaskManagers: a uid names one task in a session
 * (the store keys on it), `after` may name any task of the session, and tasks of equal
 * priority start in the order they were taken on (`seq`), across bulks and managers.
 */
export class TaskRegistry {
  private readonly byUid = new Map<string, Task>();
  private generated = 0;
  private seqs = 0;
  /** One copy of each pilot's sandbox directory, shared by its tasks. */
  readonly sandboxDirs = new Interner();

  get(uid: string): Task | undefined {
    return this.byUid.get(uid);
  }

  /** A task's description (agents hand tasks back without it). */
  descriptionOf(uid: string): TaskDescription | undefined {
    return this.byUid.get(uid)?.description;
  }

  /** The final state a task has reached as delivered, if it has (dependencies read it). */
  finalOf(uid: string): FinalTaskState | undefined {
    const t = this.byUid.get(uid);
    return t !== undefined && isFinalTaskState(t.state) ? t.state : undefined;
  }

  /**
   * `uid` ran in `sandbox`, as its record says when it comes back: set now, so a dependent
   * released at once can stage from it before the store's notification brings the same path.
   */
  readonly ranIn = (uid: string, sandbox: string): void => {
    const t = this.byUid.get(uid);
    if (t !== undefined && t.sandbox !== sandbox) t.setSandbox(sandbox, this.sandboxDirs);
  };

  /** Every task, in the order they were taken on. */
  values(): IterableIterator<Task> {
    return this.byUid.values();
  }

  has(uid: string): boolean {
    return this.byUid.has(uid);
  }

  /** A generated uid that no task has (nor `taken`, e.g. the uids of the bulk being added). */
  nextUid(taken: (uid: string) => boolean = () => false): string {
    for (;;) {
      const uid = `task.${String(this.generated++).padStart(6, '0')}`;
      if (!this.byUid.has(uid) && !taken(uid)) return uid;
    }
  }

  /** Takes tasks on, in order: each gets the next submission number. */
  add(tasks: Iterable<Task>): void {
    for (const t of tasks) {
      t.seq = this.seqs++;
      this.byUid.set(t.uid, t);
    }
  }
}
