import type { TaskRecord } from '../../generated';
import type { Request } from './request';
import type { Hold } from './slots';

/** Tasks of a shape must end this fast (a moving average of their holds) to be followed. */
export const FOLLOW_MAX_HOLD_MS = 50;

/** How much time the followers queued behind one running task should cover. */
export const FOLLOW_COVER_MS = 12;

/** The most followers queued behind one running task. */
export const FOLLOW_MAX_DEPTH = 8;

/** Holds of a shape measured before its tasks may be followed. */
const MIN_SAMPLES = 4;

/** Shapes whose pace is remembered (the least recently used is forgotten). */
const MAX_PACED_SHAPES = 64;

/** The tasks that share one set of slots, in the order they run; the slots go with the last. */
interface Chain {
  key: string;
  holds: Hold[];
  members: string[];
  /** When the member that runs now began to hold the slots (allocation, or the last release). */
  since: number;
}

/** A moving average of how long a shape's tasks hold their slots. */
interface Pace {
  avgMs: number;
  samples: number;
}

/**
 * Whether a task (asking `r`) may be followed, or follow: one process of an executable forked on
 * the agent's node, with no tag that ties it to others.
 */
export function followable(task: TaskRecord, r: Request): boolean {
  const d = task.description;
  return (
    r.ranks === 1 &&
    !r.lane &&
    !r.home &&
    r.colocate === undefined &&
    r.exclusive === undefined &&
    (d.mode ?? 'executable') === 'executable' &&
    (d.launch ?? 'fork') === 'fork'
  );
}

/**
 * Follow-on starts for many identical short tasks: when a task of a shape does not fit, it may
 * be given the slots of a running task of the same shape, to start the moment that one ends
 * ("it follows it"); the spawner helper that runs the one starts the other without a word from
 * the agent, and reports both later in one message. On a machine where every wake-up of a
 * process costs tens of microseconds, the round trip to the agent for each start, not the work,
 * bounds the rate of short tasks; HyperQueue's workers prefetch tasks for the same reason.
 *
 * Only where it cannot cost a task its turn: a shape whose tasks end within FOLLOW_MAX_HOLD_MS
 * on average, behind a task that has not yet run much longer than that average (so a follower
 * does not wait long behind one, unless that one then runs long), and only as many followers
 * as cover FOLLOW_COVER_MS. The core asks only when this shape holds every waiting task and
 * no nodes are reserved (no task of another shape or priority could use the slots first).
 * The slots are given back when the last task of their chain is released.
 */
export class FollowOns {
  private readonly chainOf = new Map<string, Chain>();
  /** Per shape key, chains with a member still running that may take followers. */
  private readonly open = new Map<string, Set<Chain>>();
  private readonly pace = new Map<string, Pace>();

  /** A task that may be followed got slots of its own. */
  placed(uid: string, key: string, holds: Hold[], now: number): void {
    const chain: Chain = { key, holds, members: [uid], since: now };
    this.chainOf.set(uid, chain);
    let set = this.open.get(key);
    if (set === undefined) this.open.set(key, (set = new Set()));
    set.add(chain);
  }

  /**
   * A waiting task of shape `key` that does not fit: the slots of a chain of its shape it may
   * queue on (and the uid it follows), if its shape is fast enough and a chain has room.
   */
  follow(uid: string, key: string, now: number): { holds: Hold[]; follows: string } | undefined {
    const depth = this.depthFor(key);
    const chains = this.open.get(key);
    if (depth === 0 || chains === undefined) return undefined;
    // not behind one that has run far longer than its shape's tasks do: it may go on for long
    const stale = now - (2 * this.pace.get(key)!.avgMs + FOLLOW_COVER_MS);
    let best: Chain | undefined;
    for (const c of chains) {
      if (
        c.members.length <= depth &&
        c.since >= stale &&
        (best === undefined || c.members.length < best.members.length)
      ) {
        best = c;
        if (c.members.length === 1) break;
      }
    }
    if (best === undefined) return undefined;
    const follows = best.members[best.members.length - 1]!;
    best.members.push(uid);
    this.chainOf.set(uid, best);
    return { holds: best.holds, follows };
  }

  /**
   * A task of a chain was released: 'kept' while a later one of its chain holds the slots,
   * 'free' for the last one (its slots go back), undefined for a task of no chain.
   */
  released(uid: string, now: number): 'kept' | 'free' | undefined {
    const chain = this.chainOf.get(uid);
    if (chain === undefined) return undefined;
    this.chainOf.delete(uid);
    const i = chain.members.indexOf(uid);
    if (i === 0) {
      this.sample(chain.key, now - chain.since);
      chain.since = now;
    }
    chain.members.splice(i, 1);
    if (chain.members.length > 0) return 'kept';
    this.open.get(chain.key)?.delete(chain);
    if (this.open.get(chain.key)?.size === 0) this.open.delete(chain.key);
    return 'free';
  }

  /** Followers one running task of the shape may have now (0: none, its tasks are slow). */
  depthFor(key: string): number {
    const p = this.pace.get(key);
    if (p === undefined || p.samples < MIN_SAMPLES || p.avgMs > FOLLOW_MAX_HOLD_MS) return 0;
    return Math.max(
      1,
      Math.min(FOLLOW_MAX_DEPTH, Math.ceil(FOLLOW_COVER_MS / Math.max(p.avgMs, 0.1))),
    );
  }

  private sample(key: string, ms: number): void {
    const p = this.pace.get(key);
    this.pace.delete(key); // to the end of the map's order: the most recently used
    if (p === undefined) {
      this.pace.set(key, { avgMs: ms, samples: 1 });
      if (this.pace.size > MAX_PACED_SHAPES) this.pace.delete(this.pace.keys().next().value!);
      return;
    }
    // a short memory: a shape whose tasks turn slow stops being followed within a few ends
    p.avgMs += (ms - p.avgMs) / Math.min(p.samples + 1, 8);
    p.samples++;
    this.pace.set(key, p);
  }
}
