import { errorMeta } from '../../errors';
import type { Clock, Timer } from '../../lib/clock';
import type { Logger } from '../../lib/logger';
import { errnoOf, StoreUnwritableError } from '../state-store';

/** Called with the error when the store stops being able to write, with undefined once it can. */
export type UnwritableListener = (error: StoreUnwritableError | undefined) => void;

/**
 * What the embedded store does while its file cannot be written (a full disk, a quota, EIO):
 * it keeps the condition (errno, file, since when) and tells listeners as it begins and ends,
 * and it spaces its tries, doubling the wait from `firstMs` up to `maxMs`. The store holds its
 * appends meanwhile and writes them, in order, once a try succeeds.
 */
export class WriteRetry {
  private condition: { errno: string; path: string; since: number } | undefined;
  private delay = 0;
  private waiting: { timer: Timer; resolve: () => void } | undefined;
  private readonly listeners = new Set<UnwritableListener>();

  constructor(
    private readonly clock: Clock,
    private readonly firstMs: number,
    private readonly maxMs: number,
    private readonly log: Logger,
  ) {}

  get failing(): boolean {
    return this.condition !== undefined;
  }

  /** The condition as an error (undefined while the store writes). */
  error(held: number, lost = 0): StoreUnwritableError | undefined {
    const c = this.condition;
    return c === undefined ? undefined : new StoreUnwritableError({ ...c, held, lost });
  }

  onChange(listener: UnwritableListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A write, fsync or cut of `path` failed with `e`; `held`: notifications now waiting. */
  failed(e: unknown, path: string, held: number): void {
    const errno = errnoOf(e);
    const c = this.condition;
    if (c !== undefined && c.errno === errno && c.path === path) return;
    this.condition = { errno, path, since: c?.since ?? this.clock.now() };
    this.log.warn('store cannot write, holding appends and retrying', {
      path,
      held,
      ...errorMeta(e),
    });
    this.tell(this.error(held));
  }

  /** A try succeeded: the condition (if any) ends. */
  succeeded(written: number): void {
    const c = this.condition;
    this.delay = 0;
    if (c === undefined) return;
    this.condition = undefined;
    this.log.info('store writes again', {
      path: c.path,
      errno: c.errno,
      unwritableMs: this.clock.now() - c.since,
      written,
    });
    this.tell(undefined);
  }

  /** Waits before the next try: firstMs, then twice as long each time, up to maxMs. */
  pause(): Promise<void> {
    this.delay = this.delay === 0 ? this.firstMs : Math.min(this.maxMs, this.delay * 2);
    return new Promise<void>((resolve) => {
      const timer = this.clock.setTimeout(() => this.wake(), this.delay);
      this.waiting = { timer, resolve };
    });
  }

  /** Ends the current pause now (the store is closing: one last try). */
  wake(): void {
    const w = this.waiting;
    this.waiting = undefined;
    w?.timer.cancel();
    w?.resolve();
  }

  private tell(error: StoreUnwritableError | undefined): void {
    for (const l of this.listeners) {
      try {
        l(error);
      } catch (e) {
        this.log.error('store condition listener failed', errorMeta(e));
      }
    }
  }
}
