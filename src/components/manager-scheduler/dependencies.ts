import type { TaskDescription, TaskRecord } from '../../generated';
import type { FinalTaskState } from '../../states/task-model';

/** When a dependency lets its dependent go (`after` entries, see the task description). */
export type DependencyCondition = 'done' | 'final' | 'failed' | 'ready';

/** What a task waits for: `after` entries in one form. */
export interface Dependency {
  task: string;
  on: DependencyCondition;
}

/** The `after` entries of a description, each as { task, on } (the default is `done`). */
export function dependenciesOf(d: TaskDescription): Dependency[] {
  return (d.after ?? []).map((a) =>
    typeof a === 'string' ? { task: a, on: 'done' } : { task: a.task, on: a.on ?? 'done' },
  );
}

/**
 * The NAME of PF_SERVICE_<NAME>, where a dependent on 'ready' finds a service: its name (else
 * uid) in capitals, each character other than a letter or digit as '_'.
 */
export function serviceEnvName(nameOrUid: string): string {
  return nameOrUid.toUpperCase().replace(/[^A-Z0-9]/g, '_');
}

/** How a final dependency bears on its dependent: it lets it go, or it never will. */
export function verdict(on: DependencyCondition, final: FinalTaskState): 'met' | 'never' {
  switch (on) {
    case 'done':
      return final === 'DONE' ? 'met' : 'never';
    case 'final':
      return 'met';
    case 'failed':
      return final === 'FAILED' ? 'met' : 'never';
    case 'ready':
      // a service that ended is not ready, and never will be again
      return 'never';
  }
}

/** A dependency not met yet: it has not ended, or (on 'ready') the service is not ready. */
export interface OpenDependency extends Dependency {
  waitsFor: 'end' | 'ready';
}

/** A dependency that can never be met, for the reason that ends its dependent. */
export interface Unmet {
  dependency: Dependency;
  ended: FinalTaskState;
}

interface Waiting {
  task: TaskRecord;
  /** When it began to wait here. */
  since: number;
  /** Dependencies not met yet. */
  open: number;
  /** Set once it was let go or dropped: later events about it are ignored. */
  gone: boolean;
}

/**
 * The tasks that wait for others, and what each waits for (tako's Waiting{unfinished_deps}).
 * Pure: the scheduler tells it of final states and asks it to hold tasks; it answers which
 * tasks may go on and which can never run.
 */
export class DependencyGate {
  private readonly waitingOn = new Map<string, { w: Waiting; on: DependencyCondition }[]>();
  private readonly byUid = new Map<string, Waiting>();

  constructor(
    /** The final state a task of the session already reached, if it did. */
    private readonly finalOf: (uid: string) => FinalTaskState | undefined,
    /** Whether a service task of the session is ready now (and not ended). */
    private readonly isReady: (uid: string) => boolean = () => false,
  ) {}

  get size(): number {
    return this.byUid.size;
  }

  /** Whether `uid` waits here. */
  has(uid: string): boolean {
    return this.byUid.has(uid);
  }

  /**
   * Holds a task until its dependencies are met. Returns 'go' when they already are, the unmet
   * dependency when one already ended so that it never will be, else 'wait'.
   */
  hold(task: TaskRecord, deps: readonly Dependency[], now = 0): 'go' | 'wait' | Unmet {
    let open = 0;
    const pending: Dependency[] = [];
    for (const dep of deps) {
      const ended = this.finalOf(dep.task);
      if (ended === undefined && dep.on === 'ready' && this.isReady(dep.task)) continue;
      if (ended === undefined) {
        open++;
        pending.push(dep);
      } else if (verdict(dep.on, ended) === 'never') {
        return { dependency: dep, ended };
      }
    }
    if (open === 0) return 'go';
    const w: Waiting = { task, since: now, open, gone: false };
    this.byUid.set(task.uid, w);
    for (const dep of pending) {
      let list = this.waitingOn.get(dep.task);
      if (list === undefined) this.waitingOn.set(dep.task, (list = []));
      list.push({ w, on: dep.on });
    }
    return 'wait';
  }

  /**
   * A task ended: its dependents whose last dependency this was may go; those it can no longer
   * satisfy never will (their own dependents hear of it when the caller ends them).
   */
  onFinal(uid: string, final: FinalTaskState): { go: TaskRecord[]; never: [TaskRecord, Unmet][] } {
    const go: TaskRecord[] = [];
    const never: [TaskRecord, Unmet][] = [];
    const list = this.waitingOn.get(uid);
    if (list === undefined) return { go, never };
    this.waitingOn.delete(uid);
    for (const { w, on } of list) {
      if (w.gone) continue;
      if (verdict(on, final) === 'never') {
        this.drop(w);
        never.push([w.task, { dependency: { task: uid, on }, ended: final }]);
      } else if (--w.open === 0) {
        this.drop(w);
        go.push(w.task);
      }
    }
    return { go, never };
  }

  /** A service is ready: its dependents on 'ready' whose last dependency this was may go. */
  onReady(uid: string): TaskRecord[] {
    const list = this.waitingOn.get(uid);
    if (list === undefined) return [];
    const go: TaskRecord[] = [];
    const rest = list.filter(({ w, on }) => {
      if (on !== 'ready') return true;
      if (!w.gone && --w.open === 0) {
        this.drop(w);
        go.push(w.task);
      }
      return false;
    });
    if (rest.length > 0) this.waitingOn.set(uid, rest);
    else this.waitingOn.delete(uid);
    return go;
  }

  /**
   * What a waiting task waits for (its dependencies not met yet) and since when; undefined when
   * it does not wait here. Worked out when asked (explain), from the same facts as `hold`.
   */
  waiting(uid: string): { open: OpenDependency[]; since: number } | undefined {
    const w = this.byUid.get(uid);
    if (w === undefined) return undefined;
    const open: OpenDependency[] = [];
    for (const dep of dependenciesOf(w.task.description)) {
      if (this.finalOf(dep.task) !== undefined) continue;
      if (dep.on !== 'ready') open.push({ ...dep, waitsFor: 'end' });
      else if (!this.isReady(dep.task)) open.push({ ...dep, waitsFor: 'ready' });
    }
    return { open, since: w.since };
  }

  /** Takes a waiting task out (a cancel); undefined when it does not wait here. */
  take(uid: string): TaskRecord | undefined {
    const w = this.byUid.get(uid);
    if (w === undefined) return undefined;
    this.drop(w);
    return w.task;
  }

  /** Every waiting task, taken out (a shutdown). */
  takeAll(): TaskRecord[] {
    const all = [...this.byUid.values()].map((w) => w.task);
    for (const w of this.byUid.values()) w.gone = true;
    this.byUid.clear();
    this.waitingOn.clear();
    return all;
  }

  /** Entries in other tasks' lists are dropped lazily (gone), when those tasks end. */
  private drop(w: Waiting): void {
    w.gone = true;
    this.byUid.delete(w.task.uid);
  }
}
