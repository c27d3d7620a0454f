import type { Clock, Timer } from '../../src/lib/clock';

/** A clock tests drive by hand: timers fire only inside advance(). */
export class FakeClock implements Clock {
  private t: number;
  private queue: { at: number; seq: number; fn: () => void; live: boolean }[] = [];
  private seq = 0;

  constructor(start = 1_700_000_000_000) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): Timer {
    const entry = { at: this.t + ms, seq: this.seq++, fn, live: true };
    this.queue.push(entry);
    return { cancel: () => void (entry.live = false) };
  }

  /** Moves time forward, firing due timers in order (including ones they schedule). */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      const due = this.queue
        .filter((e) => e.live && e.at <= end)
        .sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (due === undefined) break;
      due.live = false;
      this.t = Math.max(this.t, due.at);
      due.fn();
    }
    this.queue = this.queue.filter((e) => e.live);
    this.t = end;
  }

  /**
   * The process was stopped for `ms` (SIGSTOP, then SIGCONT): time jumps, and every timer that
   * fell due meanwhile fires late, at the new time, as a real event loop fires them.
   */
  stall(ms: number): void {
    this.t += ms;
    this.advance(0);
  }

  pending(): number {
    return this.queue.filter((e) => e.live).length;
  }
}
