import type { Task } from '../client/task';

/** Called with the tasks of a watch that reached a final state, in the order they did. */
type OnFinal = (tasks: Task[]) => void;

interface Watch {
  pending: Set<string>;
  onFinal: OnFinal;
  /** Ended tasks not yet handed to `onFinal` (handed in one call per turn of the loop). */
  ended: Task[];
  flush?: NodeJS.Immediate | undefined;
}

/**
 * Which watched tasks reach a final state, from one listener on the session's state changes
 * for every open wait (POST /v1/tasks/wait): a wait of 10,000 tasks costs a map lookup per
 * state change, not a scan. The tasks that end within one turn of the event loop reach their
 * watch together.
 */
export class FinalWatch {
  private readonly byUid = new Map<string, Set<Watch>>();
  private stop: (() => void) | undefined;

  constructor(private readonly subscribe: (fn: (t: Task) => void) => () => void) {}

  /** Watches `tasks` (none of them final): returns how to stop watching. */
  watch(tasks: Iterable<Task>, onFinal: OnFinal): () => void {
    const w: Watch = { pending: new Set(), onFinal, ended: [] };
    for (const t of tasks) {
      w.pending.add(t.uid);
      let set = this.byUid.get(t.uid);
      if (set === undefined) this.byUid.set(t.uid, (set = new Set()));
      set.add(w);
    }
    this.stop ??= this.subscribe((t) => this.onState(t));
    return () => this.unwatch(w);
  }

  close(): void {
    this.stop?.();
    this.stop = undefined;
    this.byUid.clear();
  }

  private onState(t: Task): void {
    if (!t.final) return;
    const set = this.byUid.get(t.uid);
    if (set === undefined) return;
    this.byUid.delete(t.uid);
    for (const w of set) {
      if (!w.pending.delete(t.uid)) continue;
      w.ended.push(t);
      w.flush ??= setImmediate(() => {
        w.flush = undefined;
        const ended = w.ended;
        w.ended = [];
        w.onFinal(ended);
      });
    }
  }

  private unwatch(w: Watch): void {
    if (w.flush !== undefined) clearImmediate(w.flush);
    for (const uid of w.pending) {
      const set = this.byUid.get(uid);
      set?.delete(w);
      if (set?.size === 0) this.byUid.delete(uid);
    }
    w.pending.clear();
    if (this.byUid.size === 0) {
      this.stop?.();
      this.stop = undefined;
    }
  }
}
