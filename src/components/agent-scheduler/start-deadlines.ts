import type { TaskRecord } from '../../generated';
import type { Clock, Timer } from '../../lib/clock';
import { EventHeap } from '../../lib/event-heap';

/**
 * The latest time each waiting task that declares walltimeS may start and still end by the
 * pilot's drain point (drain point less walltimeS). A timer on the injected clock fires at the
 * earliest of them and hands the tasks whose time has passed, and that still wait, to `due`.
 * Without it a task deep in a blocked queue would be found too late only once it reached the
 * head, and would sit at the pilot until then. A task that starts or leaves is forgotten
 * (`left`); its heap entry stays until the heap is rebuilt, once such entries outnumber the
 * waiting ones, so a long pilot's finished tasks are not kept.
 */
export class StartDeadlines {
  private heap = new EventHeap();
  private bySlot: (TaskRecord | undefined)[] = [];
  private readonly slotOf = new Map<TaskRecord, number>();
  private timer: Timer | undefined;
  private armedAt = Infinity;
  private drainsAt: number | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly due: (tasks: TaskRecord[]) => void,
  ) {}

  /** The drain point is known from now on (tasks added before are added again by the caller). */
  setDrainPoint(at: number): void {
    this.drainsAt = at;
  }

  add(task: TaskRecord): void {
    const w = task.description.walltimeS;
    if (w === undefined || this.drainsAt === undefined || this.slotOf.has(task)) return;
    this.slotOf.set(task, this.bySlot.length);
    this.heap.push(this.drainsAt - w * 1000, this.bySlot.length);
    this.bySlot.push(task);
    this.arm();
  }

  /** The task no longer waits here (it started, was canceled or given back). */
  left(task: TaskRecord): void {
    const slot = this.slotOf.get(task);
    if (slot === undefined) return;
    this.slotOf.delete(task);
    this.bySlot[slot] = undefined;
    if (this.bySlot.length > 1_024 && this.slotOf.size * 2 < this.bySlot.length) this.rebuild();
  }

  stop(): void {
    this.timer?.cancel();
    this.timer = undefined;
    this.heap.clear();
    this.bySlot = [];
    this.slotOf.clear();
  }

  private arm(): void {
    const next = this.heap.peekTime();
    if (next === undefined || next >= this.armedAt) return;
    this.timer?.cancel();
    this.armedAt = next;
    // a task may start up to its latest start itself: it is too late just after
    this.timer = this.clock.setTimeout(() => this.fire(), Math.max(0, next - this.clock.now()) + 1);
  }

  private fire(): void {
    this.timer = undefined;
    this.armedAt = Infinity;
    const now = this.clock.now();
    const out: TaskRecord[] = [];
    while (this.heap.size > 0 && this.heap.peekTime()! < now) {
      const task = this.bySlot[this.heap.pop()];
      if (task === undefined) continue;
      this.left(task);
      out.push(task);
    }
    this.arm();
    if (out.length > 0) this.due(out);
  }

  private rebuild(): void {
    const waiting = [...this.slotOf.keys()];
    this.heap = new EventHeap();
    this.bySlot = [];
    this.slotOf.clear();
    for (const t of waiting) this.add(t);
  }
}
