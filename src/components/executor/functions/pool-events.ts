import { errorMeta } from '../../../errors';
import type { Logger } from '../../../lib/logger';
import type { CallLost, CallOutcome, CallStarted, FunctionPoolHandlers } from './pool-types';

/**
 * Hands the pool's events to its handlers, a bulk per kind; a handler that throws is logged,
 * not let into the pool's loop.
 */
export class PoolEvents {
  private soon: { finished: CallOutcome[]; failed: CallLost[] } | undefined;

  constructor(
    private readonly handlers: FunctionPoolHandlers,
    private readonly log: Logger,
  ) {}

  deliver(started: CallStarted[], finished: CallOutcome[], failed: CallLost[]): void {
    const h = this.handlers;
    if (started.length > 0) this.safely('started', () => h.started(started));
    if (finished.length > 0) this.safely('finished', () => h.finished(finished));
    if (failed.length > 0) this.safely('failed', () => h.failed(failed));
  }

  /** Events found inside call() or stop(): delivered on a later turn, never inside the caller's. */
  finishedSoon(ev: CallOutcome): void {
    this.queue().finished.push(ev);
  }

  failedSoon(ev: CallLost): void {
    this.queue().failed.push(ev);
  }

  unusable(message: string, index: number): void {
    this.safely('unusable', () => this.handlers.unusable?.(message, index));
  }

  private queue(): { finished: CallOutcome[]; failed: CallLost[] } {
    if (this.soon === undefined) {
      const soon = { finished: [], failed: [] };
      this.soon = soon;
      setImmediate(() => {
        this.soon = undefined;
        this.deliver([], soon.finished, soon.failed);
      });
    }
    return this.soon;
  }

  private safely(kind: string, fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.log.error('function pool event handler threw', { kind, ...errorMeta(e) });
    }
  }
}
