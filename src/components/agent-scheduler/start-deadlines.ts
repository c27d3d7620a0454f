import type { TaskRecord } from '../../generated';
import type { Clock, Timer } from '../../lib/clock';
import { EventHeap } from '../../lib/event-heap';

/**
 * The latest time each waiting task that declares walltimeS may start and still end by the
 * pilot's drain point (drain point less walltimeS). A timer on the injected clock fires at the
 * earliest of them and hands the tasks whose time has passed to `due`, which decides whether
 * they still wait (an entry of a task that started or left is stale and is skipped there).
 * Without it a task deep in a blocked queue would be found too late only once it reached the
 * head, and would sit at the pilot until then.
 */
export class StartDeadlines {
  private readonly heap = new EventHeap();
  private tasks: (TaskRecord | undefined)[] = [];
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
    if (w === undefined || this.drainsAt === undefined) return;
    this.heap.push(this.drainsAt - w * 1000, this.tasks.length);
    this.tasks.push(task);
    this.arm();
  }

  stop(): void {
    this.timer?.cancel();
    this.timer = undefined;
    this.heap.clear();
    this.tasks = [];
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
      const i = this.heap.pop();
      out.push(this.tasks[i]!);
      this.tasks[i] = undefined;
    }
    if (this.heap.size === 0) this.tasks = [];
    this.arm();
    if (out.length > 0) this.due(out);
  }
}
