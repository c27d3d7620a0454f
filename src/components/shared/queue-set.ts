import type { TaskRecord } from '../../generated';
import type { Logger } from '../../lib/logger';
import type { ClientSecurity, ServerSecurity } from '../../transport/curve';
import { LocalQueue } from '../../transport/local-queue';
import {
  BoundQueueReceiver,
  QueueReceiver,
  QueueSender,
  type PullEnd,
} from '../../transport/queue';
import { consumeLocalTasks, consumeTaskBulks, type Intake } from './shell';

/** The sockets and loops one process's components use, closed in the right order. */
export class QueueSet {
  private readonly senders: QueueSender[] = [];
  private readonly receivers: PullEnd[] = [];
  private readonly loops: Promise<void>[] = [];
  private readonly locals: { queue: LocalQueue<unknown>; log: Logger; name: string }[] = [];

  /** `security`: this agent's keys, where the queue is another process's CURVE server. */
  sender(address: string, security?: ClientSecurity): QueueSender {
    const s = new QueueSender(address, security);
    this.senders.push(s);
    return s;
  }

  /** Runs a task component's receive loop on the queue at `address`. */
  consume(address: string, intake: Intake, log: Logger, security?: ClientSecurity): void {
    this.loop(address, (r) => consumeTaskBulks(r, intake, log), security);
  }

  /**
   * Binds the queue at `address` (its one producer, another process, connects: `security`
   * admits that peer alone) and runs a task component's receive loop on it; returns the
   * address bound.
   */
  async consumeBound(
    address: string,
    intake: Intake,
    log: Logger,
    security?: ServerSecurity,
  ): Promise<string> {
    const r = await BoundQueueReceiver.listen(address, security);
    this.receivers.push(r);
    this.loops.push(consumeTaskBulks(r, intake, log));
    return r.address;
  }

  /** A hop between two components of this process (see LocalQueue); `name` is for logs. */
  local<T>(name: string, log: Logger): LocalQueue<T> {
    const queue = new LocalQueue<T>();
    this.locals.push({ queue: queue as LocalQueue<unknown>, log, name });
    return queue;
  }

  /** Runs a task component's intake on a local queue. */
  consumeLocal(queue: LocalQueue<TaskRecord>, intake: Intake, log: Logger): void {
    consumeLocalTasks(queue, intake, log);
  }

  /** Runs any receive loop on the queue at `address`. */
  loop(address: string, run: (r: QueueReceiver) => Promise<void>, security?: ClientSecurity): void {
    const r = new QueueReceiver(address, security);
    this.receivers.push(r);
    this.loops.push(run(r));
  }

  /**
   * Moves every queue of this set that connects to `from` (another process's socket) to `to`:
   * an agent whose client listens elsewhere now. Returns how many moved.
   */
  move(from: string, to: string): number {
    if (from === to) return 0;
    let moved = 0;
    for (const q of [...this.senders, ...this.receivers]) {
      if (!(q instanceof QueueSender || q instanceof QueueReceiver) || q.address !== from) continue;
      q.move(to);
      moved++;
    }
    return moved;
  }

  /** Stops taking messages and waits for every loop to end. */
  async stopReceiving(): Promise<void> {
    for (const r of this.receivers) r.close();
    for (const { queue, log, name } of this.locals) {
      const dropped = queue.close();
      // like bulks left in a socket's queue: their tasks are ended by the owner of last resort
      if (dropped > 0) log.warn('local queue closed with items in it', { queue: name, dropped });
    }
    await Promise.allSettled(this.loops);
  }

  /** Flushes and closes the senders. */
  async closeSenders(): Promise<void> {
    await Promise.all(this.senders.map((s) => s.close()));
  }

  /** Stops everything: receivers, then senders. */
  async close(): Promise<void> {
    await this.stopReceiving();
    await this.closeSenders();
  }
}
