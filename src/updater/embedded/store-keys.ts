import type { Notification } from '../../generated';
import { StoreError } from '../state-store';
import { packKey, unpackKey, WIDE_KEY, type SegmentSummary } from './segment-summary';
import type { SummaryBuilder } from './summary-builder';
import { MAX_POSITION, UidIndex } from './uid-index';

/** A batch's new notifications (with their uid and state numbers), and per batch its count. */
export interface Claimed {
  fresh: Notification[];
  uids: number[];
  states: number[];
  counts: number[];
}

/**
 * The embedded store's idempotence keys: per uid, pairs [key code, feed position] (a UidIndex)
 * where a key code stands for the idempotence key less the uid (kind, attempt, state), see
 * codeOf; the positions give history(uid). States are numbered on first sight (the models have
 * a few dozen states). The store claims a notification's key before it writes it and unclaims
 * it when the write fails, so the index holds exactly what is durable or being written.
 */
export class StoreKeys {
  readonly index = new UidIndex();
  private readonly stateCodes = new Map<string, number>();
  /** State number -> name (a sealed segment's summary names its states in this order). */
  readonly stateNames: string[] = [];
  private readonly rareCodes = new Map<string, number>();

  /**
   * Claims the keys of the batches' notifications, the first at feed position `at`; per
   * batch, how many were new. On a throw nothing stays claimed.
   */
  claimAll(batches: readonly { batch: readonly Notification[] }[], at: number): Claimed {
    const c: Claimed = { fresh: [], uids: [], states: [], counts: [] };
    try {
      for (const { batch } of batches) {
        let count = 0;
        for (const n of batch) {
          const state = this.stateNumber(n.state);
          const uid = this.claim(n, state, at + c.fresh.length);
          if (uid < 0) continue;
          c.fresh.push(n);
          c.uids.push(uid);
          c.states.push(state);
          count++;
        }
        c.counts.push(count);
      }
    } catch (e) {
      this.unclaimAll(c.fresh);
      throw e;
    }
    return c;
  }

  /** Undoes the claims of `fresh` (the latest ones), newest first. */
  unclaimAll(fresh: readonly Notification[]): void {
    for (let i = fresh.length - 1; i >= 0; i--) this.unclaim(fresh[i]!);
  }

  /**
   * Records n's key (its state by number) at feed position `at`; returns the number of n's
   * uid in the index, or -1 if the store holds the key already.
   */
  claim(n: Notification, state: number, at: number): number {
    if (at > MAX_POSITION) {
      throw new StoreError(`the embedded store holds at most ${MAX_POSITION + 1} notifications`);
    }
    const uid = this.index.intern(n.uid);
    return this.index.claim(uid, this.codeOf(n.kind === 'pilot' ? 1 : 0, n.attempt, state), at)
      ? uid
      : -1;
  }

  /** Undoes the latest claim of n (claims are undone newest first). */
  private unclaim(n: Notification): void {
    this.index.unclaim(this.index.find(n.uid));
  }

  /** Feed positions of uid's notifications, in order (none for a uid never seen). */
  positionsOf(uid: string): number[] {
    return this.index.positionsOf(this.index.find(uid));
  }

  stateNumber(state: string): number {
    let code = this.stateCodes.get(state);
    if (code === undefined) {
      code = this.stateNames.length;
      this.stateCodes.set(state, code);
      this.stateNames.push(state);
    }
    return code;
  }

  /**
   * Adds the keys of a sealed segment's summary to the index (its notifications lie at feed
   * positions from `s.first` on), mapping its state numbers and wide keys to this store's codes.
   */
  loadSummary(s: SegmentSummary): void {
    const states = s.states.map((name) => this.stateNumber(name));
    const identity = states.every((code, i) => code === i);
    const wideAt = new Map<number, number>();
    for (let w = 0; w < s.wide.at.length; w++) wideAt.set(s.wide.at[w]!, w);
    const { keys, positions, uidCounts, uidStarts } = s;
    const index = this.index;
    const text = index.addText(s.uidText);
    index.reserve(uidCounts.length, keys.length);
    const first = s.first;
    let e = 0;
    const direct = identity && wideAt.size === 0;
    for (let u = 0; u < uidCounts.length; u++) {
      const uid = index.uidIn(text, uidStarts[u]!, uidStarts[u + 1]! - uidStarts[u]!);
      if (direct) {
        // The codes are this store's own: copied as they are.
        index.addRun(uid, keys, positions, e, uidCounts[u]!, first);
        e += uidCounts[u]!;
        continue;
      }
      for (const end = e + uidCounts[u]!; e < end; e++) {
        const key = keys[e]!;
        let code: number;
        if (key === WIDE_KEY) {
          const w = wideAt.get(e)!;
          code = this.codeOf(s.wide.kinds[w]!, s.wide.attempts[w]!, states[s.wide.states[w]!]!);
        } else if (identity) {
          code = key;
        } else {
          const { kind, attempt, state } = unpackKey(key);
          code = this.codeOf(kind, attempt, states[state]!);
        }
        index.add(uid, code, first + positions[e]!);
      }
    }
  }

  /**
   * (kind, attempt, state) as one int32, distinct for distinct triples: attempt * 2^13 +
   * state number * 2 + kind bit (packKey) while attempt < 2^18 and the state is among the first
   * 4096 seen (every real session); any other triple gets a negative code of its own, by its
   * key string.
   */
  private codeOf(kind: number, attempt: number, state: number): number {
    const packed = packKey(kind, attempt, state);
    if (packed >= 0) return packed;
    const key = `${kind}\u0000${attempt}\u0000${this.stateNames[state]}`;
    let code = this.rareCodes.get(key);
    if (code === undefined) {
      code = -1 - this.rareCodes.size;
      this.rareCodes.set(key, code);
    }
    return code;
  }
}

/** Adds n (its uid and state by number) to a segment's summary. */
export function summarize(
  builder: SummaryBuilder,
  uid: number,
  n: Notification,
  state: number,
): void {
  const kind = n.kind === 'pilot' ? 1 : 0;
  builder.add(uid, packKey(kind, n.attempt, state), kind, n.attempt, state);
}
