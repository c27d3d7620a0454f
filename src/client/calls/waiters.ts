import { TimeoutError } from '../../errors';
import { systemClock, type Timer } from '../../lib/clock';

interface Waiter<S extends string> {
  pending: Set<string>;
  states: ReadonlySet<S>;
  resolve(): void;
  reject(e: Error): void;
  timer?: Timer;
}

/** Promises that resolve once every named entity has reached one of the wanted states. */
export class Waiters<S extends string> {
  private readonly waiters = new Set<Waiter<S>>();

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
          this.waiters.delete(w);
          const some = [...pending].slice(0, 5).map((u) => `${u} (${current(u) ?? 'unknown'})`);
          reject(
            new TimeoutError(
              `${what}: ${pending.size} still not there after ${timeoutMs} ms: ${some.join(', ')}`,
            ),
          );
        }, timeoutMs);
      }
      this.waiters.add(w);
    });
  }

  /** Call for every delivered state. */
  update(uid: string, state: S): void {
    for (const w of this.waiters) {
      if (!w.states.has(state) || !w.pending.has(uid)) continue;
      w.pending.delete(uid);
      if (w.pending.size === 0) {
        w.timer?.cancel();
        this.waiters.delete(w);
        w.resolve();
      }
    }
  }

  rejectAll(e: Error): void {
    for (const w of this.waiters) {
      w.timer?.cancel();
      w.reject(e);
    }
    this.waiters.clear();
  }
}
