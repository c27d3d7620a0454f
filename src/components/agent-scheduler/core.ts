import type { Reason, TaskRecord } from '../../generated';
import type { Notification } from '../../states/notification';
import { COMPONENTS } from '../../states/task-model';
import type { Clock } from '../../lib/clock';
import { canceledBy } from '../shared/canceled';
import { CancelSet, reason } from '../shared/reasons';
import { checkArrivals, transition } from '../shared/transition';
import type { AgentSchedulerEffects } from './effects';

const ME = COMPONENTS.agentScheduler;

/** What a pilot's agent holds: for now one node with numbered cores and GPUs. */
export interface NodeResources {
  name: string;
  cores: number;
  gpus: number;
}

type Slots = NonNullable<TaskRecord['slots']>;

/**
 * Owns AGENT_SCHEDULING: allocates core (and whole-GPU) slots on the pilot's node.
 * Waiting tasks are served by priority (higher first), FIFO within a priority; a task that
 * does not fit now lets smaller ones behind it start (simple backfill, no reservation yet).
 * A task that can never fit fails at once with what it asked and what the pilot has.
 */
export class AgentSchedulerCore {
  private readonly freeCores: number[];
  private readonly freeGpus: number[];
  /** priority -> FIFO of waiting tasks; `order` keeps priorities sorted high to low. */
  private readonly waiting = new Map<number, TaskRecord[]>();
  private order: number[] = [];
  private readonly canceled = new CancelSet();
  private readonly allocated = new Map<string, Slots>();
  private nWaiting = 0;

  constructor(
    private readonly effects: AgentSchedulerEffects,
    private readonly clock: Clock,
    private readonly node: NodeResources,
  ) {
    this.freeCores = Array.from({ length: node.cores }, (_, i) => node.cores - 1 - i);
    this.freeGpus = Array.from({ length: node.gpus }, (_, i) => node.gpus - 1 - i);
  }

  onTasks(tasks: TaskRecord[]): void {
    checkArrivals(tasks, 'AGENT_SCHEDULING_PENDING', 'AGENT_SCHEDULING', ME);
    const now = this.clock.now();
    const notes: Notification[] = [];
    for (const task of tasks) {
      if (this.canceled.has(task.uid)) {
        notes.push(transition(task, 'CANCELED', ME, now, { reason: canceledBy(ME) }));
        continue;
      }
      notes.push(transition(task, 'AGENT_SCHEDULING', ME, now));
      const never = this.neverFits(task);
      if (never !== undefined) {
        task.reason = never;
        notes.push(transition(task, 'FAILED', ME, now, { reason: never }));
        continue;
      }
      this.enqueue(task);
    }
    this.schedule(now, notes);
  }

  /** Slots come back from the Executor once a task has left AGENT_EXECUTING. */
  onReleased(released: { uid: string }[]): void {
    for (const { uid } of released) {
      const slots = this.allocated.get(uid);
      if (slots === undefined) continue; // released already: exactly once
      this.allocated.delete(uid);
      for (const s of slots) {
        this.freeCores.push(...s.cores);
        this.freeGpus.push(...s.gpus);
      }
    }
    const notes: Notification[] = [];
    this.schedule(this.clock.now(), notes);
  }

  onCancel(uids: string[]): void {
    this.canceled.add(uids);
    const now = this.clock.now();
    const notes: Notification[] = [];
    const wanted = new Set(uids);
    for (const [prio, queue] of this.waiting) {
      const keep = queue.filter((t) => {
        if (!wanted.has(t.uid)) return true;
        notes.push(transition(t, 'CANCELED', ME, now, { reason: canceledBy(ME) }));
        return false;
      });
      this.nWaiting -= queue.length - keep.length;
      this.waiting.set(prio, keep);
    }
    if (notes.length > 0) this.effects.notify(notes);
  }

  /** The agent is going away: every waiting task ends with `final`. */
  onShutdown(final: 'FAILED' | 'CANCELED', why: Reason): void {
    const now = this.clock.now();
    const notes: Notification[] = [];
    for (const queue of this.waiting.values()) {
      for (const t of queue) {
        t.reason = why;
        notes.push(transition(t, final, ME, now, { reason: why }));
      }
    }
    this.waiting.clear();
    this.order = [];
    this.nWaiting = 0;
    if (notes.length > 0) this.effects.notify(notes);
  }

  /** Tasks waiting for slots. */
  get queued(): number {
    return this.nWaiting;
  }

  get free(): { cores: number; gpus: number } {
    return { cores: this.freeCores.length, gpus: this.freeGpus.length };
  }

  private neverFits(task: TaskRecord): Reason | undefined {
    const d = task.description;
    const ranks = d.ranks ?? 1;
    const cpr = d.coresPerRank ?? 1;
    const gpr = d.gpusPerRank ?? 0;
    const asked = { ranks, coresPerRank: cpr, gpusPerRank: gpr };
    const has = { nodes: 1, coresPerNode: this.node.cores, gpusPerNode: this.node.gpus };
    if (ranks > 1) {
      return reason(
        'E_UNSUPPORTED',
        `task asks ${ranks} ranks; this agent runs single-rank tasks only (launch 'fork')`,
        ME,
        { asked, pilot: has },
      );
    }
    if (!Number.isInteger(gpr)) {
      return reason(
        'E_UNSUPPORTED',
        `task asks gpusPerRank ${gpr}; shared GPUs are not supported yet`,
        ME,
        {
          asked,
          pilot: has,
        },
      );
    }
    if (cpr > this.node.cores || gpr > this.node.gpus) {
      return reason(
        'E_NEVER_FITS',
        `task asks ${ranks} rank x ${cpr} cores and ${gpr} GPUs; the pilot has 1 node with ` +
          `${this.node.cores} cores and ${this.node.gpus} GPUs, so it can never run`,
        ME,
        { asked, pilot: has },
      );
    }
    return undefined;
  }

  private enqueue(task: TaskRecord): void {
    const prio = task.description.priority ?? 0;
    let q = this.waiting.get(prio);
    if (q === undefined) {
      q = [];
      this.waiting.set(prio, q);
      this.order = [...this.waiting.keys()].sort((a, b) => b - a);
    }
    q.push(task);
    this.nWaiting++;
  }

  private schedule(now: number, notes: Notification[]): void {
    const out: TaskRecord[] = [];
    for (const prio of this.order) {
      if (this.freeCores.length === 0) break;
      const q = this.waiting.get(prio)!;
      let kept = 0;
      for (let i = 0; i < q.length; i++) {
        const t = q[i]!;
        if (this.freeCores.length > 0 && this.tryAllocate(t)) {
          notes.push(transition(t, 'AGENT_EXECUTING_PENDING', ME, now));
          out.push(t);
        } else {
          q[kept++] = t;
        }
        if (this.freeCores.length === 0) {
          // nothing else can start: keep the rest as is
          for (let j = i + 1; j < q.length; j++) q[kept++] = q[j]!;
          break;
        }
      }
      this.nWaiting -= q.length - kept;
      q.length = kept;
    }
    if (notes.length > 0) this.effects.notify(notes);
    if (out.length > 0) this.effects.forward(out);
  }

  private tryAllocate(task: TaskRecord): boolean {
    const cpr = task.description.coresPerRank ?? 1;
    const gpr = task.description.gpusPerRank ?? 0;
    if (cpr > this.freeCores.length || gpr > this.freeGpus.length) return false;
    const cores = this.freeCores.splice(this.freeCores.length - cpr, cpr).reverse();
    const gpus = this.freeGpus.splice(this.freeGpus.length - gpr, gpr).reverse();
    const slots: Slots = [{ node: this.node.name, cores, gpus }];
    task.slots = slots;
    this.allocated.set(task.uid, slots);
    return true;
  }
}
