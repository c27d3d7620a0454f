import type { Logger } from '../../lib/logger';
import { errorMeta } from '../../errors';

/** A set of user callbacks; one that throws is logged and never breaks delivery to others. */
export class Listeners<A extends unknown[]> {
  private readonly fns = new Set<(...args: A) => void>();

  constructor(private readonly log: Logger) {}

  add(fn: (...args: A) => void): () => void {
    this.fns.add(fn);
    return () => this.fns.delete(fn);
  }

  /** Whether any callback listens (an event none hears need not be recorded as delivered). */
  get any(): boolean {
    return this.fns.size > 0;
  }

  fire(...args: A): void {
    for (const fn of this.fns) {
      try {
        fn(...args);
      } catch (e) {
        this.log.error('user callback threw', errorMeta(e));
      }
    }
  }
}
