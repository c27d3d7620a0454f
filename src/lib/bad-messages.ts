import { systemClock, type Clock } from './clock';
import type { Logger } from './logger';

export interface BadMessagesOptions {
  /** Lines logged per kind in one window; the rest are only counted. */
  perWindow: number;
  windowMs: number;
}

const DEFAULTS: BadMessagesOptions = { perWindow: 10, windowMs: 10_000 };

/**
 * Counts the messages a process refuses, and logs them at a bounded rate: a peer that floods a
 * port with garbage costs a counter, not a log file (one line per bad message filled 21 MB).
 * Per kind, the first `perWindow` of each window are logged (warn: the process goes on); the first report after a window
 * in which some were not says how many.
 */
export class BadMessages {
  private readonly kinds = new Map<
    string,
    { count: number; windowStart: number; logged: number; suppressed: number }
  >();

  constructor(
    private readonly log: Logger,
    private readonly clock: Clock = systemClock,
    private readonly opts: BadMessagesOptions = DEFAULTS,
  ) {}

  /** A message of `kind` (the log line's text) was refused; `meta` says what was wrong. */
  report(kind: string, meta: Record<string, unknown>): void {
    const now = this.clock.now();
    let k = this.kinds.get(kind);
    if (k === undefined) {
      k = { count: 0, windowStart: now, logged: 0, suppressed: 0 };
      this.kinds.set(kind, k);
    }
    k.count++;
    if (now - k.windowStart >= this.opts.windowMs) {
      if (k.suppressed > 0) {
        this.log.warn('bad messages not logged', { kind, notLogged: k.suppressed, total: k.count });
      }
      k.windowStart = now;
      k.logged = 0;
      k.suppressed = 0;
    }
    if (k.logged < this.opts.perWindow) {
      k.logged++;
      this.log.warn(kind, { ...meta, total: k.count });
    } else {
      k.suppressed++;
    }
  }

  /** How many of each kind were refused since the start. */
  counts(): Record<string, number> {
    return Object.fromEntries([...this.kinds].map(([kind, k]) => [kind, k.count]));
  }
}
