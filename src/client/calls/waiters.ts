import { TimeoutError } from '../../errors';
import { systemClock, type Timer } from '../../lib/clock';

interface Waiter<S extends string> {
  pending: Set<string>;
  states: ReadonlySet<S>;
  resolve(): void;
  reject(e: Error): void;
  timer?: Timer;
}

/**
 * Promises that resolve once every named entity has reached one of the wanted states. The
 * waiters are indexed by the uids they still wait for, so a delivered state costs only the
 * waits on its entity: 10,000 waits of one task each (a function handle's calls) do not make
 * every state of every task visit all of them.
 */
export class Waiters<S extends string> {
  private readonly byUid = new Map<string, Set<Waiter<S>>>();

  wait(
    uids: Iterable<string>,
    states: ReadonlySet<S>,
    current: (uid: string) => S | undefined,
    timeoutMs: number | undefined,
    what: string,
  ): Promise<void> {
    const pending = new Set<string>();
    for (const u of uids) {
      const s = current(u);
      if (s === undefined || !states.has(s)) pending.add(u);
    }
    if (pending.size === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const w: Waiter<S> = { pending, states, resolve, reject };
      if (timeoutMs !== undefined) {
        // the system clock's timer: a wait of more than 24.8 days must not end at once
        w.timer = systemClock.setTimeout(() => {
          this.forget(w);
          const some = [...pending].slice(0, 5).map((u) => `${u} (${current(u) ?? 'unknown'})`);
          reject(
            new TimeoutError(
              `${what}: ${pending.size} still not there after ${timeoutMs} ms: ${some.join(', ')}`,
            ),
          );
        }, timeoutMs);
      }
      for (const u of pending) {
        let on = this.byUid.get(u);
        if (on === undefined) this.byUid.set(u, (on = new Set()));
        on.add(w);
      }
    });
  }

  /** Call for every delivered state. */
  update(uid: string, state: S): void {
    const on = this.byUid.get(uid);
    if (on === undefined) return;
    for (const w of on) {
      if (!w.states.has(state)) continue;
      on.delete(w);
      w.pending.delete(uid);
      if (w.pending.size === 0) {
        w.timer?.cancel();
        w.resolve();
      }
    }
    if (on.size === 0) this.byUid.delete(uid);
  }

  rejectAll(e: Error): void {
    const all = new Set<Waiter<S>>();
    for (const on of this.byUid.values()) for (const w of on) all.add(w);
    this.byUid.clear();
    for (const w of all) {
      w.timer?.cancel();
      w.reject(e);
    }
  }

  /** Drops a waiter that gave up from the index of each uid it still waited for. */
  private forget(w: Waiter<S>): void {
    for (const u of w.pending) {
      const on = this.byUid.get(u);
      on?.delete(w);
      if (on?.size === 0) this.byUid.delete(u);
    }
  }
}
