import { isFinal, rankOf, type StateModel } from './model';
import type { Notification } from './notification';

/** One state a tracked entity passed, in model order, exactly once per state and attempt. */
export interface Emission {
  uid: string;
  state: string;
  attempt: number;
  /** True when the state was not notified itself but implied by a later one. */
  inferred: boolean;
  /** The notification that carried this state (absent when inferred). */
  notification?: Notification;
}

interface Progress {
  attempt: number;
  rank: number;
  final: boolean;
}

/**
 * Rebuilds each entity's ordered history from notifications in any order, with duplicates
 * (DESIGN.md §4). Pure: no clock, no I/O.
 */
export class StateTracker {
  private readonly progress = new Map<string, Progress>();
  private readonly failed: number;
  private readonly canceled: number;
  private readonly restartRank: number;

  constructor(
    private readonly model: StateModel<string>,
    /** The state a newer attempt restarts at (tasks: TMGR_SCHEDULING_PENDING). */
    restartState: string = model.states[0]!,
  ) {
    this.failed = rankOf(model, model.finals[1]!);
    this.canceled = rankOf(model, model.finals[2]!);
    this.restartRank = rankOf(model, restartState);
  }

  /** The highest state delivered so far for `uid`. */
  current(uid: string): { state: string; attempt: number; final: boolean } | undefined {
    const p = this.progress.get(uid);
    if (p === undefined || p.rank < 0) return undefined;
    return { state: this.model.states[p.rank]!, attempt: p.attempt, final: p.final };
  }

  /** Returns the states to deliver for this notification (possibly none), in order. */
  ingest(n: Notification): Emission[] {
    const rank = rankOf(this.model, n.state);
    if (rank < 0) return [];
    let p = this.progress.get(n.uid);
    if (p === undefined) {
      // a first sight of a retried task starts at the retry state, not at NEW
      p = { attempt: n.attempt, rank: n.attempt > 1 ? this.restartRank - 1 : -1, final: false };
      this.progress.set(n.uid, p);
    }
    if (p.final || n.attempt < p.attempt) return [];
    const out: Emission[] = [];
    if (n.attempt > p.attempt) {
      p.attempt = n.attempt;
      p.rank = this.restartRank - 1;
    }
    if (rank === this.failed || rank === this.canceled) {
      p.rank = rank;
      p.final = true;
      out.push({
        uid: n.uid,
        state: this.model.states[rank]!,
        attempt: n.attempt,
        inferred: false,
        notification: n,
      });
      return out;
    }
    if (rank <= p.rank) return out;
    for (let r = p.rank + 1; r < rank; r++) {
      out.push({ uid: n.uid, state: this.model.states[r]!, attempt: p.attempt, inferred: true });
    }
    // the model's own string: a decoded one may be a slice that keeps a whole message alive
    const state = this.model.states[rank]!;
    out.push({ uid: n.uid, state, attempt: n.attempt, inferred: false, notification: n });
    p.rank = rank;
    p.final = isFinal(this.model, n.state);
    return out;
  }

  /** Forgets an entity (the client no longer follows it). */
  forget(uid: string): void {
    this.progress.delete(uid);
  }
}
