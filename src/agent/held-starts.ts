import type { Clock, Timer } from '../lib/clock';
import { carryInto } from '../components/shared/quiet-carry';
import { isSupersedableNotification } from '../components/shared/transition';
import { rankOf } from '../states/model';
import type { Notification } from '../states/notification';
import { START_HOLD_MS } from '../states/quiet-states';
import { TASK_MODEL, isFinalTaskState, type TaskState } from '../states/task-model';

/**
 * The starts of function calls the agent holds back before publishing them (isSupersedable):
 * each goes out `holdMs` after it was taken, unless a later state of its attempt that implies
 * it (the hand-back) passes first, which makes it redundant: it is dropped and inferred.
 */
export class HeldStarts {
  /** uid -> the held start and when it is due; in the order taken, so the oldest come first. */
  private readonly held = new Map<string, { n: Notification; due: number }>();
  private timer: Timer | undefined;

  constructor(
    private readonly clock: Clock,
    /** Where held starts go once due (or flushed). */
    private readonly release: (ns: Notification[]) => void,
    private readonly holdMs = START_HOLD_MS,
  ) {}

  /** Starts held now. */
  get size(): number {
    return this.held.size;
  }

  /**
   * What of `ns` goes out now, in order: a supersedable start is held, a held start that a
   * notification of its task supersedes is dropped, and one it does not supersede (a failure,
   * a cancel, a new attempt) goes out just before it, so every state is still delivered.
   */
  pass(ns: readonly Notification[]): readonly Notification[] {
    if (this.held.size === 0 && !ns.some(isSupersedableNotification)) return ns;
    const out: Notification[] = [];
    for (const n of ns) {
      const h = n.kind === 'task' ? this.held.get(n.uid) : undefined;
      if (h !== undefined) {
        this.held.delete(n.uid);
        if (!supersedes(n, h.n)) out.push(h.n);
        else carryInto(n, h.n); // its time stays in the store
      }
      if (isSupersedableNotification(n)) {
        this.held.set(n.uid, { n, due: this.clock.now() + this.holdMs });
        this.timer ??= this.clock.setTimeout(() => this.due(), this.holdMs);
      } else out.push(n);
    }
    return out;
  }

  /** Releases every held start now (before the UpdateWorkers close). */
  flush(): void {
    this.timer?.cancel();
    this.timer = undefined;
    const all = [...this.held.values()].map((h) => h.n);
    this.held.clear();
    if (all.length > 0) this.release(all);
  }

  private due(): void {
    this.timer = undefined;
    const now = this.clock.now();
    const out: Notification[] = [];
    for (const [uid, h] of this.held) {
      if (h.due > now) {
        this.timer = this.clock.setTimeout(() => this.due(), h.due - now);
        break;
      }
      this.held.delete(uid);
      out.push(h.n);
    }
    if (out.length > 0) this.release(out);
  }
}

/** A later, non-final state of the same attempt: the start is implied by it. */
function supersedes(later: Notification, start: Notification): boolean {
  const state = later.state as TaskState;
  return (
    later.attempt === start.attempt &&
    !isFinalTaskState(state) &&
    rankOf(TASK_MODEL, state) > rankOf(TASK_MODEL, start.state as TaskState)
  );
}
