/**
 * The status event of the Node spawner helper (main.ts), and the ring of recent ends it carries:
 * the last RECENT_MAX exited and failed events, kept as the lines that were sent, so a master that
 * re-attaches after another died mid-way learns exits the dead one read and never passed on.
 * pf-spawner.c keeps the same ring (its recent_add): keep the two in step. No imports: the helper
 * starts fast.
 */

/** How many ends a status event carries at most. */
export const RECENT_MAX = 1024;

/** The last `max` lines added, oldest first; a full ring overwrites its oldest. */
export class RecentEnds {
  private readonly lines: string[] = [];
  /** Where the next line goes once the ring is full: the oldest one. */
  private next = 0;

  constructor(private readonly max = RECENT_MAX) {}

  add(line: string): void {
    if (this.lines.length < this.max) {
      this.lines.push(line);
      return;
    }
    this.lines[this.next] = line;
    this.next = (this.next + 1) % this.max;
  }

  list(): string[] {
    return [...this.lines.slice(this.next), ...this.lines.slice(0, this.next)];
  }
}

/**
 * The status event's line (no newline): `ended` are event lines as they were sent, put in
 * verbatim, so they read back exactly as the master got them then.
 */
export function statusLine(
  running: readonly { uid: string; pid: number }[],
  queued: readonly string[],
  ended: readonly string[],
): string {
  const head = `{"ev":"status","running":${JSON.stringify(running)}`;
  return `${head},"queued":${JSON.stringify(queued)},"ended":[${ended.join(',')}]}`;
}
