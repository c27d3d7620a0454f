/**
 * Runs at most `limit` async jobs at once; the rest wait in order. Bounds the file work a
 * shell starts for a large bulk (open files, thread-pool slots) without blocking its loop.
 */
export class Limiter {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {
    if (!(limit >= 1)) throw new RangeError(`limit must be at least 1, got ${limit}`);
  }

  async run<T>(job: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.active++;
    }
    try {
      return await job();
    } finally {
      // hand the slot straight to the next job, or give it back
      const next = this.waiting.shift();
      if (next !== undefined) next();
      else this.active--;
    }
  }
}
