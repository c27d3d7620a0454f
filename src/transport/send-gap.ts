/** The gap between the messages of a busy queue that carries tasks between processes. */
export const BUSY_GAP_MS = 2;

/**
 * Spaces a producer's messages at least `gapMs` apart while it is busy, gathering the items of
 * bulks sent meanwhile into the next message. On this kind of machine each message costs its
 * sender and receiver a thread wake-up (tens of microseconds in a virtual machine), and on a
 * steady trickle (a task handed back as each one ends) that, not the work, bounds the rate. A
 * bulk sent after a quiet spell of `gapMs` goes at once: a lone task waits for nothing.
 */
export class SendGap {
  private items: unknown[] = [];
  private waiters: { resolve(): void; reject(e: unknown): void }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private last = -Infinity;

  constructor(
    private readonly gapMs: number,
    private readonly sendNow: (items: unknown[]) => Promise<void>,
  ) {}

  send(items: readonly unknown[]): Promise<void> {
    const now = performance.now();
    if (this.timer === undefined && now - this.last >= this.gapMs) {
      this.last = now;
      return this.sendNow(items as unknown[]);
    }
    for (const x of items) this.items.push(x);
    // a failure reaches the sends it carried (their waiters), not the timer
    this.timer ??= setTimeout(
      () => void this.flush().catch(() => undefined),
      this.last + this.gapMs - now,
    );
    return new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  /** Sends what is gathered now (before a close). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.items.length === 0) return Promise.resolve();
    const items = this.items;
    const waiters = this.waiters;
    this.items = [];
    this.waiters = [];
    this.last = performance.now();
    const sent = this.sendNow(items);
    sent.then(
      () => waiters.forEach((w) => w.resolve()),
      (e: unknown) => waiters.forEach((w) => w.reject(e)),
    );
    return sent;
  }

  /** Drops what is gathered (a discarded queue): its sends resolve, as a dropped send does. */
  drop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.items = [];
    for (const w of this.waiters.splice(0)) w.resolve();
  }
}
