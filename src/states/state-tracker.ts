import { isFinal, rankOf, type StateModel } from './model';
import { ownCopy } from '../lib/strings';
import type { Notification } from './notification';
import { passedStates, passedTs } from './passed';

/** One state a tracked entity passed, in model order, exactly once per state and attempt. */
export interface Emission<S extends string = string> {
  uid: string;
  state: S;
  attempt: number;
  /** True when the state was not notified itself but implied by a later one. */
  inferred: boolean;
  /** The notification that carried this state (absent when inferred). */
  notification?: Notification;
  /**
   * A state not notified itself whose time a later notification carries (`detail.passed`, the
   * quiet states of a function task): when it was entered. Not inferred, then.
   */
  ts?: number;
}

/**
 * An entity's progress as one number, so that 100,000 tasks cost a Map entry each and no
 * object: (attempt * 2 + final) * RANKS + rank + 1 (rank -1: nothing delivered yet).
 */
const RANKS = 64;
interface Progress {
  attempt: number;
  rank: number;
  final: boolean;
}
function unpack(v: number): Progress {
  const rank = (v % RANKS) - 1;
  const rest = Math.floor(v / RANKS);
  return { attempt: Math.floor(rest / 2), rank, final: rest % 2 === 1 };
}
function pack(p: Progress): number {
  return (p.attempt * 2 + (p.final ? 1 : 0)) * RANKS + p.rank + 1;
}

/**
 * Rebuilds each entity's ordered history from notifications in any order, with duplicates
 * (docs/state-model.md, Reconstruction). Pure: no clock, no I/O.
 */
export class StateTracker<S extends string = string> {
  private readonly progress = new Map<string, number>();
  private readonly failed: number;
  private readonly canceled: number;
  private readonly restartRank: number;

  constructor(
    private readonly model: StateModel<S>,
    /** The state a newer attempt restarts at (tasks: TMGR_SCHEDULING_PENDING). */
    restartState: S = model.states[0]!,
  ) {
    this.failed = rankOf(model, model.finals[1]!);
    this.canceled = rankOf(model, model.finals[2]!);
    this.restartRank = rankOf(model, restartState);
  }

  /** The highest state delivered so far for `uid`. */
  current(uid: string): { state: S; attempt: number; final: boolean } | undefined {
    const v = this.progress.get(uid);
    if (v === undefined) return undefined;
    const p = unpack(v);
    if (p.rank < 0) return undefined;
    return { state: this.model.states[p.rank]!, attempt: p.attempt, final: p.final };
  }

  /** Returns the states to deliver for this notification (possibly none), in order. */
  /**
   * `key`: the entity's uid as the caller holds it, to key this tracker's entry with instead of
   * a copy of the notification's (which may be a slice of a whole decoded message).
   */
  ingest(n: Notification, key?: string): Emission<S>[] {
    const rank = rankOf(this.model, n.state);
    if (rank < 0) return [];
    const known = this.progress.get(n.uid);
    // a first sight of a retried task starts at the retry state, not at NEW
    const p =
      known !== undefined
        ? unpack(known)
        : { attempt: n.attempt, rank: n.attempt > 1 ? this.restartRank - 1 : -1, final: false };
    if (p.final || n.attempt < p.attempt) return [];
    const out = this.advance(p, n, rank);
    const v = pack(p);
    if (v !== known) {
      // a copy as key: a decoded uid may be a slice that keeps its whole message alive
      this.progress.set(known === undefined ? (key ?? ownCopy(n.uid)) : n.uid, v);
    }
    return out;
  }

  /** Moves `p` to `rank` (a state of n's attempt or later), returning what to emit. */
  private advance(p: Progress, n: Notification, rank: number): Emission<S>[] {
    const out: Emission<S>[] = [];
    if (n.attempt > p.attempt) {
      p.attempt = n.attempt;
      p.rank = this.restartRank - 1;
    }
    const carries = n.detail?.passed !== undefined && p.attempt === n.attempt;
    if (rank === this.failed || rank === this.canceled) {
      // states it carries were passed before it ended (and, the model being a line, the ones
      // before them): delivered first, as for a state reached
      if (carries) out.push(...this.passUpTo(p, n, this.highestPassed(n)));
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
    out.push(...this.passUpTo(p, n, rank - 1, carries));
    // the model's own string: a decoded one may be a slice that keeps a whole message alive
    const state = this.model.states[rank]!;
    out.push({ uid: n.uid, state, attempt: n.attempt, inferred: false, notification: n });
    p.rank = rank;
    p.final = isFinal(this.model, n.state);
    return out;
  }

  /**
   * The states after `p`'s up to rank `top`, which `n` implies: with the time `n` carries for
   * one (`carries`), else inferred.
   */
  private passUpTo(p: Progress, n: Notification, top: number, carries = true): Emission<S>[] {
    const out: Emission<S>[] = [];
    for (let r = p.rank + 1; r <= top; r++) {
      const state = this.model.states[r]!;
      const ts = carries ? passedTs(n, state) : undefined;
      out.push(
        ts === undefined
          ? { uid: n.uid, state, attempt: p.attempt, inferred: true }
          : { uid: n.uid, state, attempt: p.attempt, inferred: false, ts },
      );
    }
    return out;
  }

  /** The rank of the latest state `n` carries in `detail.passed` (-1: none of this model). */
  private highestPassed(n: Notification): number {
    let top = -1;
    for (const [state] of passedStates(n)) top = Math.max(top, rankOf(this.model, state));
    return top;
  }

  /** Forgets an entity (the client no longer follows it). */
  forget(uid: string): void {
    this.progress.delete(uid);
  }
}
