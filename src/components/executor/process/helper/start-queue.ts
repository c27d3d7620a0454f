/**
 * Queued starts in the Node spawner helper (main.ts): a spawn "after" a task that runs
 * in the helper, or is itself queued there (SpawnSpec.after), waits behind it and starts the
 * moment that task's main process is reaped, its start failed, or it was dropped. pf-spawner.c
 * does the same (its Queued and Followers): keep the two in step. No imports: the helper starts
 * fast.
 *
 * A queued spawn is its request alone: no pipes, cgroup or files until it starts.
 */

interface Queued<R> {
  request: R;
  /** The uid it waits behind (a running task or a queued spawn). */
  after: string;
}

export class StartQueue<R extends { uid: string }> {
  private readonly queued = new Map<string, Queued<R>>();
  /** Per uid (running or queued), the uids queued behind it, in the order they start. */
  private readonly lines = new Map<string, string[]>();

  /** `start` spawns a request and says whether its task now runs (false: its start failed). */
  constructor(private readonly start: (request: R) => boolean) {}

  /** How many spawns wait. */
  get size(): number {
    return this.queued.size;
  }

  has(uid: string): boolean {
    return this.queued.has(uid);
  }

  /** The uids that wait, in the order they were queued. */
  uids(): string[] {
    return [...this.queued.keys()];
  }

  /** Queues `request` behind `after`, which the caller knows runs or is queued here. */
  add(request: R, after: string): void {
    this.queued.set(request.uid, { request, after });
    const line = this.lines.get(after);
    if (line === undefined) this.lines.set(after, [request.uid]);
    else line.push(request.uid);
  }

  /**
   * `uid` ended (its main process was reaped, or it never started): what waits behind it
   * starts now, in order; when one cannot start, those behind it start too.
   */
  release(uid: string): void {
    const work = this.takeLine(uid);
    for (let next = work.shift(); next !== undefined; next = work.shift()) {
      const q = this.queued.get(next)!;
      this.queued.delete(next); // its own spawn must not find it queued (EEXIST)
      if (!this.start(q.request)) work.unshift(...this.takeLine(next));
    }
  }

  /**
   * Drops the queued spawn `uid` (a kill): those behind it take its place in its line. False
   * when `uid` is not queued.
   */
  cancel(uid: string): boolean {
    const q = this.queued.get(uid);
    if (q === undefined) return false;
    this.queued.delete(uid);
    const behind = this.takeLine(uid);
    for (const b of behind) this.queued.get(b)!.after = q.after;
    const line = this.lines.get(q.after)!;
    line.splice(line.indexOf(uid), 1, ...behind);
    if (line.length === 0) this.lines.delete(q.after);
    return true;
  }

  /** The helper stops: nothing queued starts; the uids that were. */
  clear(): string[] {
    const uids = [...this.queued.keys()];
    this.queued.clear();
    this.lines.clear();
    return uids;
  }

  private takeLine(uid: string): string[] {
    const line = this.lines.get(uid) ?? [];
    this.lines.delete(uid);
    return line;
  }
}
