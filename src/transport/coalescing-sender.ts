import type { QueueSender } from './queue';

/**
 * Gathers the items sent within one event-loop turn and sends them as one bulk: the
 * components of a process each publish a few notifications per bulk they handle, and one
 * message per turn instead of one per call saves an encode and a socket send each.
 */
export class CoalescingSender<T> {
  private pending: T[] = [];
  private scheduled = false;

  constructor(
    private readonly sender: Pick<QueueSender, 'send'>,
    private readonly onError: (e: unknown) => void,
  ) {}

  send(items: readonly T[]): void {
    for (const x of items) this.pending.push(x);
    if (this.scheduled || this.pending.length === 0) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  /** Sends what is gathered now (before a close). */
  flush(): void {
    this.scheduled = false;
    if (this.pending.length === 0) return;
    const bulk = this.pending;
    this.pending = [];
    this.sender.send(bulk).catch(this.onError);
  }
}
