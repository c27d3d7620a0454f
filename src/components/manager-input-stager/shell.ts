import type { TaskRecord } from '../../generated';
import type { Logger } from '../../lib/logger';
import type { Notification } from '../../states/notification';
import type { ServerSecurity } from '../../transport/curve';
import { MAX_MESSAGE_BYTES } from '../../transport/frames';
import { BoundQueueSender } from '../../transport/queue';
import { TASK_RECOVERY_OWNER } from '../../states/task-model';
import { reason } from '../shared/reasons';
import { BUSY_GAP_MS, MAX_BUSY_GAP_MS } from '../../transport/send-gap';
import { sendLogged } from '../shared/shell';
import type { ManagerInputStagerEffects } from './effects';

/** A task given to an agent: which attempt it holds. */
export interface Given {
  uid: string;
  attempt: number;
}

/**
 * The ManagerInputStager's effects: one queue per pilot that its agent pulls tasks from, and
 * the owner-of-last-resort's list of what each agent was given and has not handed back.
 */
export class ManagerInputStagerShell implements ManagerInputStagerEffects {
  private readonly inputs = new Map<string, BoundQueueSender>();
  /** Tasks handed to each pilot's agent and neither back nor ended: uid -> attempt. */
  private readonly outstanding = new Map<string, Map<string, number>>();
  /**
   * Every task given to each pilot, with the attempt it was given (0: fenced, it speaks of no
   * attempt; -1: any attempt, known from a resumed session's store): what its agent may speak
   * of (see `owns`).
   */
  private readonly ledger = new Map<string, Map<string, number>>();
  private readonly closing: Promise<void>[] = [];

  constructor(
    private readonly log: Logger,
    readonly notify: (notifications: Notification[]) => void,
    /** Where pilot queues listen, e.g. `tcp://127.0.0.1:0`. */
    private readonly listenAt: string,
    readonly retry: (tasks: TaskRecord[]) => void,
    /**
     * What a pilot's agent may transfer from and to the client's files, per task (`record`:
     * the attempt and directives its progress events name).
     */
    private readonly files?: {
      allow(
        pilot: string,
        task: string,
        grant: { read?: string[]; write?: string[] },
        record: TaskRecord,
      ): void;
      forget(pilot: string, task: string): void;
    },
  ) {}

  forwardToPilot(pilot: string, tasks: TaskRecord[]): void {
    const q = this.inputs.get(pilot);
    if (q === undefined) {
      this.log.error('no input queue for pilot', { pilot, uids: tasks.map((t) => t.uid) });
      return;
    }
    this.given(pilot, tasks);
    for (const t of tasks) this.grantTransfers(pilot, t);
    sendLogged(q, tasks, this.log, 'forward to agent');
  }

  /**
   * Binds the queue a pilot's agent pulls from (`at`: the address it already knows): this
   * shell's own PUSH, a CurveZMQ server admitting that pilot's key alone (`security`). A PUSH
   * takes nothing in, so no one but this shell can put tasks into the agent's input. Tasks
   * sent before the agent connects (or, resumed, reconnects) wait for it.
   */
  async addPilot(pilot: string, at?: string, security?: ServerSecurity): Promise<string> {
    const sender = (await BoundQueueSender.listen(at ?? this.listenAt, security))
      .spaceBy(
        BUSY_GAP_MS,
        MAX_BUSY_GAP_MS,
        // held only while the agent has others of ours: a lone task or call goes at once
        (sending) => (this.outstanding.get(pilot)?.size ?? 0) > sending,
      )
      .onOversize((item, bytes) => this.tooLarge(pilot, item as TaskRecord, bytes));
    this.inputs.set(pilot, sender);
    return sender.address;
  }

  /**
   * A task too large for any message to its agent (over MAX_MESSAGE_BYTES encoded, which submit
   * refuses; one that grew on the way, e.g. by its services' endpoints) was not sent: it ends
   * FAILED saying its size and the limit, rather than waiting for good. Its agent-side holder
   * never got it, so the TaskManager, owner of last resort, ends it (docs/state-model.md).
   */
  private tooLarge(pilot: string, task: TaskRecord, bytes: number): void {
    const message = `the task is ${bytes} bytes encoded, over the ${MAX_MESSAGE_BYTES} bytes one message to its agent may carry: it was not sent`;
    this.log.error('task too large for a message to its agent', {
      pilot,
      taskId: task.uid,
      bytes,
      limit: MAX_MESSAGE_BYTES,
    });
    this.returned([{ uid: task.uid, pilot }]);
    this.fence(pilot, [task.uid]);
    const why = reason('E_TOO_LARGE', message, TASK_RECOVERY_OWNER, {
      bytes,
      limit: MAX_MESSAGE_BYTES,
    });
    task.reason = why;
    this.notify([
      {
        kind: 'task',
        uid: task.uid,
        attempt: task.attempt,
        state: 'FAILED',
        ts: Date.now(),
        component: TASK_RECOVERY_OWNER,
        detail: { reason: why },
      },
    ]);
  }

  /** A resumed session: tasks its agent holds, and ones sent again because they may be lost. */
  adopt(pilot: string, held: readonly Given[], resend: TaskRecord[]): void {
    this.given(pilot, held);
    if (resend.length === 0) return;
    this.given(pilot, resend);
    const q = this.inputs.get(pilot);
    if (q !== undefined) sendLogged(q, resend, this.log, 'resend to agent');
  }

  /** The agent handed these back, or they ended: no longer the owner of last resort's. */
  returned(tasks: readonly { uid: string; pilot?: string }[]): void {
    for (const t of tasks) {
      if (t.pilot === undefined) continue;
      this.outstanding.get(t.pilot)?.delete(t.uid);
      if (this.transferring.delete(t.uid)) this.files?.forget(t.pilot, t.uid);
    }
  }

  /** Tasks allowed to transfer files now (their grants go when they come back or end). */
  private readonly transferring = new Set<string>();

  /** A task whose directives transfer files: its agent may read and write those alone. */
  private grantTransfers(pilot: string, t: TaskRecord): void {
    if (this.files === undefined || t.staging === undefined) return;
    const read = t.staging.input.filter((d) => d.action === 'transfer').map((d) => d.source);
    const write = t.staging.output.filter((d) => d.action === 'transfer').map((d) => d.target);
    if (read.length + write.length === 0) return;
    this.files.allow(pilot, t.uid, { read, write }, t);
    this.transferring.add(t.uid);
  }

  /** Tasks given to a pilot's agent that have not come back yet. */
  outstandingOf(pilot: string): Given[] {
    const out = this.outstanding.get(pilot);
    return out === undefined ? [] : [...out].map(([uid, attempt]) => ({ uid, attempt }));
  }

  /** Tasks given to a pilot's agent that never came back (call once the pilot has ended). */
  unreturned(pilot: string): Given[] {
    const out = this.outstanding.get(pilot);
    this.outstanding.delete(pilot);
    return out === undefined ? [] : [...out].map(([uid, attempt]) => ({ uid, attempt }));
  }

  /**
   * The pilot has ended: its queue goes at once, with what its agent has not taken (those
   * tasks are unreturned: the owner of last resort ends them).
   */
  removePilot(pilot: string): void {
    const q = this.inputs.get(pilot);
    if (q === undefined) return;
    this.inputs.delete(pilot);
    this.closing.push(q.discard());
  }

  /** Flushes what live agents have yet to take (bounded: a gone agent holds nothing up). */
  async close(): Promise<void> {
    await Promise.all([...this.inputs.values()].map((q) => q.close()));
    this.inputs.clear();
    await Promise.allSettled(this.closing);
  }

  /**
   * Was this attempt of `uid` given to `pilot` (any attempt, when `attempt` is not given) and
   * not fenced since? Its agent may hand back and report on those alone.
   */
  owns(pilot: string, uid: string, attempt?: number): boolean {
    const given = this.ledger.get(pilot)?.get(uid);
    if (given === undefined || given === 0) return false;
    return attempt === undefined || given === -1 || given === attempt;
  }

  /** A resumed session: tasks (and attempts, if known) on their way back from `pilot` are its own too. */
  own(pilot: string, tasks: readonly { uid: string; attempt?: number }[]): void {
    let mine = this.ledger.get(pilot);
    if (mine === undefined) this.ledger.set(pilot, (mine = new Map<string, number>()));
    for (const t of tasks) mine.set(t.uid, t.attempt ?? -1);
  }

  /**
   * Fences what `pilot` was given of these tasks: they start a new attempt elsewhere, so what
   * its agent still says of them (it was lost, not dead) is refused.
   */
  fence(pilot: string, uids: readonly string[]): void {
    const mine = this.ledger.get(pilot);
    if (mine !== undefined) for (const uid of uids) if (mine.has(uid)) mine.set(uid, 0);
  }

  private given(pilot: string, tasks: readonly Given[]): void {
    let out = this.outstanding.get(pilot);
    if (out === undefined) this.outstanding.set(pilot, (out = new Map<string, number>()));
    for (const t of tasks) out.set(t.uid, t.attempt);
    this.own(pilot, tasks);
  }
}
