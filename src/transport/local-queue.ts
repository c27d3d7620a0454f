/**
 * A queue between two components of one process. A bridge hop (encode, two sockets, a pump,
 * decode, validate) costs ~100 µs and an event-loop turn or two; on the agent's hot path
 * (scheduler → executor → output stager, and releases back to the scheduler) that latency,
 * not CPU, bounded how fast a core is handed to the next task. Here a bulk is handed over by
 * reference on the next microtask, and everything sent within one turn reaches the consumer
 * as one bulk. What was sent must not be touched by the sender again (the task components
 * forward what they no longer hold). Nothing crosses a process boundary, so nothing is
 * encoded or schema-checked: the consumer's intake still checks what it must (a state).
 */
export class LocalQueue<T> {
  private pending: T[] = [];
  private scheduled = false;
  private closed = false;
  private consumer: ((items: T[]) => void) | undefined;

  /** Same shape as QueueSender.send, so components cannot tell the two apart. */
  send(items: readonly T[]): Promise<void> {
    if (this.closed) return Promise.resolve();
    for (const x of items) this.pending.push(x);
    if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(() => this.deliver());
    }
    return Promise.resolve();
  }

  /** The one consumer; bulks sent before it attached are delivered when it does. */
  consume(fn: (items: T[]) => void): void {
    this.consumer = fn;
    if (this.pending.length > 0 && !this.scheduled) {
      this.scheduled = true;
      queueMicrotask(() => this.deliver());
    }
  }

  /** Stops delivering; what is still pending is dropped, as a closed receiver's queue is. */
  close(): number {
    this.closed = true;
    const dropped = this.pending.length;
    this.pending = [];
    return dropped;
  }

  private deliver(): void {
    this.scheduled = false;
    if (this.closed || this.consumer === undefined || this.pending.length === 0) return;
    const items = this.pending;
    this.pending = [];
    this.consumer(items);
  }
}
