import { closeSync, fstatSync, openSync, readSync, writeFileSync, writeSync } from 'node:fs';
import * as path from 'node:path';
import { PRIVATE_FILE } from '../../lib/private-files';
import { errnoOf, StoreUnwritableError } from '../../updater/state-store';

/** How soon a count of events nobody heard is written (see setSoon). */
const LAZY_WRITE_MS = 50;

/**
 * How many callback events each manager of a session has delivered, in
 * `<session dir>/delivered`: one 8-byte slot per manager, rewritten in place after every
 * event a callback heard (and within LAZY_WRITE_MS of events nobody heard). A manager's events are a pure function of the store's notification order (its
 * StateTracker), so a resumed session replays the store and stays silent for the first
 * `count` events of each manager: none is delivered twice. The window is one event: a crash
 * inside a callback (before its count is written) delivers that one again.
 *
 * A count that cannot be written (a full disk) stays in memory and the callbacks go on; the
 * next write of that manager's slot, or `retry()`, writes it. Meanwhile `unwritable` says so
 * (a crash then would deliver again what was delivered since).
 */
export class DeliveredCounters {
  private readonly buf = Buffer.alloc(8);
  /** Slots whose count is not written. */
  private readonly unwritten = new Set<number>();
  private failure: StoreUnwritableError | undefined;
  /** The write setSoon scheduled. */
  private soon: NodeJS.Timeout | undefined;
  private readonly listeners = new Set<(e: StoreUnwritableError | undefined) => void>();
  /** Hears the counts after each change (a MongoDB session's mirror). */
  private changed: ((counts: readonly number[]) => void) | undefined;

  private constructor(
    private readonly file: string,
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
    const file = path.join(dir, 'delivered');
    return new DeliveredCounters(file, openSync(file, 'r+'), counts);
  }

  /**
   * Writes the counters file of a session whose directory is gone, from the counts its
   * database holds (a MongoDB session resumed on another machine).
   */
  static rebuild(dir: string, counts: readonly number[]): void {
    const bytes = Buffer.alloc(counts.length * 8);
    counts.forEach((c, slot) => bytes.writeDoubleLE(c, slot * 8));
    writeFileSync(path.join(dir, 'delivered'), bytes, { mode: PRIVATE_FILE, flag: 'wx' });
  }

  /** Hands the counts (live: read them when needed; a slot never set is a hole) after every change. */
  mirrorTo(fn: (counts: readonly number[]) => void): void {
    this.changed = fn;
  }

  /** Events manager `slot` delivered before (0 for a new session or a new manager). */
  get(slot: number): number {
    return this.counts[slot] ?? 0;
  }

  set(slot: number, count: number): void {
    this.counts[slot] = count;
    this.changed?.(this.counts);
    this.unwritten.add(slot);
    this.retry();
  }

  /**
   * Sets a count and writes it within LAZY_WRITE_MS (or with the next `set`, or at close): for
   * counts of events nobody heard, which a crash may repeat at no cost (nobody heard them the
   * first time either). One write per bulk of notifications was one write per function call
   * when calls come one at a time.
   */
  setSoon(slot: number, count: number): void {
    this.counts[slot] = count;
    this.changed?.(this.counts);
    this.unwritten.add(slot);
    if (this.soon !== undefined) return;
    this.soon = setTimeout(() => {
      this.soon = undefined;
      this.retry();
    }, LAZY_WRITE_MS);
    this.soon.unref();
  }

  /** While counts cannot be written: the condition. */
  get unwritable(): StoreUnwritableError | undefined {
    return this.failure;
  }

  /** Listens for counts that cannot be written (the error) and for their being written (undefined). */
  onUnwritable(listener: (e: StoreUnwritableError | undefined) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Writes the counts not written yet; true once all are. */
  retry(): boolean {
    try {
      for (const slot of this.unwritten) {
        this.buf.writeDoubleLE(this.counts[slot] ?? 0, 0);
        writeSync(this.fd, this.buf, 0, 8, slot * 8);
        this.unwritten.delete(slot);
      }
    } catch (e) {
      if (this.failure === undefined) {
        this.failure = new StoreUnwritableError(
          { errno: errnoOf(e), path: this.file, since: Date.now(), held: 0 },
          { cause: e },
        );
        this.tell(this.failure);
      }
      return false;
    }
    if (this.failure !== undefined) {
      this.failure = undefined;
      this.tell(undefined);
    }
    return true;
  }

  /** Writes what it can, then closes (never throws: counts are a resume's aid, not its truth). */
  close(): void {
    clearTimeout(this.soon);
    this.soon = undefined;
    this.retry();
    try {
      closeSync(this.fd);
    } catch {
      // nothing left to release
    }
  }

  private tell(e: StoreUnwritableError | undefined): void {
    for (const l of this.listeners) l(e);
  }
}

/**
 * One manager's place in the counters: `deliver` runs a callback event unless a previous
 * client of the session delivered it, then records that it was delivered.
 */
export class DeliveryCursor {
  private events = 0;
  private readonly silentBelow: number;
  /** Events counted since the count was last written (none heard them). */
  private unwritten = false;

  constructor(
    private readonly counters: DeliveredCounters,
    private readonly slot: number,
  ) {
    this.silentBelow = counters.get(slot);
  }

  /**
   * Runs `fire` unless a previous client delivered this event. `heard`: whether any callback
   * listens; the count of an event none hears is written after `settle()` (within 50 ms, not one
   * write per event: a crash before it repeats only events nobody heard).
   */
  deliver(fire: () => void, heard = true): void {
    if (this.events++ < this.silentBelow) return;
    if (!heard) {
      this.unwritten = true;
      return;
    }
    fire();
    this.unwritten = false;
    this.counters.set(this.slot, this.events);
  }

  /** Counts the events delivered unheard since the last write (end of a bulk), written soon. */
  settle(): void {
    if (!this.unwritten) return;
    this.unwritten = false;
    this.counters.setSoon(this.slot, this.events);
  }
}
