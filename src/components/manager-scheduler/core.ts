import type { Reason, TaskRecord } from '../../generated';
import type { Clock } from '../../lib/clock';
import type { TaskFinal } from '../../states/task-final';
import type { Notification } from '../../states/notification';
import { COMPONENTS, type AbortedTaskState } from '../../states/task-model';
import { cancelIfAsked, canceledBy } from '../shared/canceled';
import { CancelSet, reason } from '../shared/reasons';
import { checkArrivals, transition } from '../shared/transition';
import type { ManagerSchedulerEffects } from './effects';

const ME = COMPONENTS.managerScheduler;

/** What the scheduler knows of a pilot: enough to tell whether a task can ever fit it. */
export interface PilotCapacity {
  uid: string;
  cores: number;
  gpus: number;
}

/**
 * Owns TMGR_SCHEDULING: picks a pilot for each task, round robin over the pilots that can
 * ever fit it (`pilot` in the description pins one). Tasks wait while no pilot is added; once
 * pilots were added and every one has ended, no pilot can ever run them: they fail.
 */
export class ManagerSchedulerCore {
  private readonly pilots: PilotCapacity[] = [];
  /** Pilots that have ended, with their final state. */
  private readonly gone = new Map<string, string>();
  /** Pilots that were added and have ended since (or had when added). */
  private readonly endedAdded = new Set<string>();
  private readonly waiting: TaskRecord[] = [];
  private readonly canceled = new CancelSet();
  private next = 0;

  constructor(
    private readonly effects: ManagerSchedulerEffects,
    private readonly clock: Clock,
  ) {}

  onTasks(tasks: TaskRecord[]): void {
    checkArrivals(tasks, 'TMGR_SCHEDULING_PENDING', 'TMGR_SCHEDULING', ME);
    const now = this.clock.now();
    const notes: Notification[] = [];
    const out: TaskRecord[] = [];
    for (const task of tasks) {
      if (cancelIfAsked(task, this.canceled, ME, now, notes)) continue;
      notes.push(transition(task, 'TMGR_SCHEDULING', ME, now));
      this.place(task, now, notes, out);
    }
    this.flush(notes, out);
  }

  /** Tasks ended (wherever it was decided): cancels kept for them can go. */
  onTasksFinal(finals: readonly TaskFinal[]): void {
    this.canceled.forget(finals);
  }

  /** A pilot tasks may go to; adding it again updates its capacity (known once its agent is up). */
  onPilotAdded(pilot: PilotCapacity): void {
    if (this.gone.has(pilot.uid)) {
      this.endedAdded.add(pilot.uid);
      return this.placeWaiting();
    }
    const i = this.pilots.findIndex((p) => p.uid === pilot.uid);
    if (i >= 0) {
      this.pilots[i] = pilot;
      return;
    }
    this.pilots.push(pilot);
    this.placeWaiting();
  }

  /** A pilot's agent reported what it really holds; pilots not added here are ignored. */
  onPilotCapacity(pilot: PilotCapacity): void {
    const i = this.pilots.findIndex((p) => p.uid === pilot.uid);
    if (i >= 0) this.pilots[i] = pilot;
  }

  /** A pilot reached a final state (`state`): no task goes there any more. */
  onPilotGone(uid: string, state: string): void {
    this.gone.set(uid, state);
    const i = this.pilots.findIndex((p) => p.uid === uid);
    if (i >= 0) {
      this.pilots.splice(i, 1);
      this.endedAdded.add(uid);
    }
    this.placeWaiting();
  }

  onCancel(uids: string[]): void {
    this.canceled.add(uids);
    const now = this.clock.now();
    const notes: Notification[] = [];
    const keep = this.waiting.filter((t) => {
      if (!this.canceled.has(t.uid)) return true;
      notes.push(transition(t, 'CANCELED', ME, now, { reason: canceledBy(ME) }));
      return false;
    });
    this.waiting.splice(0, this.waiting.length, ...keep);
    this.flush(notes, []);
  }

  onShutdown(final: AbortedTaskState, why: Reason): void {
    const now = this.clock.now();
    const notes = this.waiting.splice(0).map((t) => transition(t, final, ME, now, { reason: why }));
    this.flush(notes, []);
  }

  get queued(): number {
    return this.waiting.length;
  }

  /** The set of pilots changed: every waiting task is placed again. */
  private placeWaiting(): void {
    const now = this.clock.now();
    const notes: Notification[] = [];
    const out: TaskRecord[] = [];
    for (const task of this.waiting.splice(0)) this.place(task, now, notes, out);
    this.flush(notes, out);
  }

  private place(task: TaskRecord, now: number, notes: Notification[], out: TaskRecord[]): void {
    const d = task.description;
    const cores = (d.ranks ?? 1) * (d.coresPerRank ?? 1);
    const gpus = (d.ranks ?? 1) * (d.gpusPerRank ?? 0);
    if (d.pilot !== undefined) {
      const pinned = this.pilots.find((p) => p.uid === d.pilot);
      if (pinned === undefined) {
        const known = this.pilots.map((p) => p.uid).join(', ') || 'none';
        const why = this.gone.has(d.pilot)
          ? `pinned pilot '${d.pilot}' has ended`
          : `pinned pilot '${d.pilot}' is not added to this task manager (pilots: ${known})`;
        return this.fail(task, reason('E_NO_SUCH_PILOT', why, ME), now, notes);
      }
      if (!fits(pinned, cores, gpus)) return this.fail(task, neverFits(task, [pinned]), now, notes);
      return this.assign(task, pinned, now, notes, out);
    }
    if (this.pilots.length === 0) {
      if (this.endedAdded.size === 0) return void this.waiting.push(task);
      return this.fail(task, this.noPilotLeft(), now, notes);
    }
    for (let i = 0; i < this.pilots.length; i++) {
      const p = this.pilots[(this.next + i) % this.pilots.length]!;
      if (fits(p, cores, gpus)) {
        this.next = (this.next + i + 1) % this.pilots.length;
        return this.assign(task, p, now, notes, out);
      }
    }
    this.fail(task, neverFits(task, this.pilots), now, notes);
  }

  private noPilotLeft(): Reason {
    const ended = [...this.endedAdded].map((uid) => `${uid} (${this.gone.get(uid)})`);
    return reason(
      'E_NO_PILOT',
      `every pilot the task could go to has ended: ${ended.join(', ')}; add a live pilot to run such tasks`,
      ME,
      { pilots: [...this.endedAdded] },
    );
  }

  private assign(
    task: TaskRecord,
    pilot: PilotCapacity,
    now: number,
    notes: Notification[],
    out: TaskRecord[],
  ): void {
    task.pilot = pilot.uid;
    notes.push(transition(task, 'TMGR_STAGING_INPUT_PENDING', ME, now, { pilot: pilot.uid }));
    out.push(task);
  }

  private fail(task: TaskRecord, why: Reason, now: number, notes: Notification[]): void {
    task.reason = why;
    notes.push(transition(task, 'FAILED', ME, now, { reason: why }));
  }

  private flush(notes: Notification[], out: TaskRecord[]): void {
    if (notes.length > 0) this.effects.notify(notes);
    if (out.length > 0) this.effects.forward(out);
  }
}

function fits(p: PilotCapacity, cores: number, gpus: number): boolean {
  return cores <= p.cores && gpus <= p.gpus;
}

function neverFits(task: TaskRecord, pilots: PilotCapacity[]): Reason {
  const d = task.description;
  const ranks = d.ranks ?? 1;
  const have = pilots.map((p) => `${p.uid}: ${p.cores} cores, ${p.gpus} GPUs`).join('; ');
  return reason(
    'E_NEVER_FITS',
    `task asks ${ranks} rank(s) x ${d.coresPerRank ?? 1} cores and ${d.gpusPerRank ?? 0} GPUs per rank; ` +
      `no pilot can ever hold it (${have})`,
    ME,
    { asked: { ranks, coresPerRank: d.coresPerRank ?? 1, gpusPerRank: d.gpusPerRank ?? 0 } },
  );
}
