import { closeSync, fstatSync, openSync, readSync, writeSync } from 'node:fs';
import * as path from 'node:path';
import { PRIVATE_FILE } from '../lib/private-files';

/**
 * How many callback events each manager of a session has delivered, in
 * `<session dir>/delivered`: one 8-byte slot per manager, rewritten in place after every
 * event. A manager's events are a pure function of the store's notification order (its
 * StateTracker), so a resumed session replays the store and stays silent for the first
 * `count` events of each manager: none is delivered twice. The window is one event: a crash
 * inside a callback (before its count is written) delivers that one again.
 */
export class DeliveredCounters {
  private readonly buf = Buffer.alloc(8);

  private constructor(
    private readonly fd: number,
    private readonly counts: number[],
  ) {}

  static open(dir: string): DeliveredCounters {
    const fd = openSync(path.join(dir, 'delivered'), 'a+', PRIVATE_FILE);
    const size = fstatSync(fd).size;
    const bytes = Buffer.alloc(size - (size % 8));
    if (bytes.length > 0) readSync(fd, bytes, 0, bytes.length, 0);
    const counts: number[] = [];
    for (let off = 0; off < bytes.length; off += 8) counts.push(bytes.readDoubleLE(off));
    // 'a+' appends on Linux whatever the position: reopen for positioned writes
    closeSync(fd);
    return new DeliveredCounters(openSync(path.join(dir, 'delivered'), 'r+'), counts);
  }

  /** Events manager `slot` delivered before (0 for a new session or a new manager). */
  get(slot: number): number {
    return this.counts[slot] ?? 0;
  }

  set(slot: number, count: number): void {
    this.counts[slot] = count;
    this.buf.writeDoubleLE(count, 0);
    writeSync(this.fd, this.buf, 0, 8, slot * 8);
  }

  close(): void {
    closeSync(this.fd);
  }
}

/**
 * One manager's place in the counters: `deliver` runs a callback event unless a previous
 * client of the session delivered it, then records that it was delivered.
 */
export class DeliveryCursor {
  private events = 0;
  private readonly silentBelow: number;

  constructor(
    private readonly counters: DeliveredCounters,
    private readonly slot: number,
  ) {
    this.silentBelow = counters.get(slot);
  }

  deliver(fire: () => void): void {
    if (this.events++ < this.silentBelow) return;
    fire();
    this.counters.set(this.slot, this.events);
  }
}
