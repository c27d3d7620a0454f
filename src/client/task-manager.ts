import type { Reason, TaskDescription, TaskRecord } from '../generated';
import { ValidationError, errorMeta } from '../errors';
import type { Logger } from '../lib/logger';
import { parseTaskDescription } from '../lib/validate';
import type { Notification } from '../states/notification';
import { StateTracker } from '../states/state-tracker';
import {
  COMPONENTS,
  TASK_MODEL,
  TASK_RECOVERY_OWNER,
  TASK_RETRY_STATE,
} from '../states/task-model';
import { reason as makeReason } from '../components/shared/reasons';
import { transition } from '../components/shared/transition';
import { Listeners } from './listeners';
import type { Pilot } from './pilot';
import type { Session } from './session';
import { Task, type StateInfo } from './task';
import { validateAll } from './validate-all';
import { Waiters } from './waiters';

const FINALS = new Set(['DONE', 'FAILED', 'CANCELED']);

/**
 * Submits tasks to the session's pilots and follows them: every state reaches `onState`
 * callbacks exactly once per attempt, in model order, whatever order notifications arrive in.
 */
export class TaskManager {
  private readonly tasks = new Map<string, Task>();
  private readonly tracker = new StateTracker(TASK_MODEL, TASK_RETRY_STATE);
  private readonly callbacks: Listeners<[Task, string, StateInfo]>;
  private readonly waiters = new Waiters();
  private readonly log: Logger;
  /** Canceled, not yet final: re-sent to each agent that reports in, since it missed them. */
  private readonly canceling = new Set<string>();

  constructor(private readonly session: Session) {
    this.log = session.log.child({ component: COMPONENTS.taskManager });
    this.callbacks = new Listeners(this.log);
    session.onNotifications((ns) => this.ingest(ns));
    session.onPilotEnded((uid, state, reason) => void this.recover(uid, state, reason));
    session.control.on((msg) => {
      if (msg.type === 'agent_ready' && this.canceling.size > 0) {
        void session.control.publish({ type: 'cancel_tasks', uids: [...this.canceling] });
      }
    });
  }

  /** Makes the pilots available to this manager's tasks (round robin over those that fit). */
  addPilots(pilots: Pilot[]): void {
    for (const p of pilots) {
      this.session.pipeline.addPilot({ uid: p.uid, cores: p.cores, gpus: p.gpus });
    }
  }

  onState(fn: (task: Task, state: string, info: StateInfo) => void): () => void {
    return this.callbacks.add(fn);
  }

  /**
   * Validates every description (a bad one rejects the whole call with each issue's path,
   * e.g. `/3/arguments/0 must be string`), then hands all tasks on in one bulk.
   */
  async submitTasks(descriptions: TaskDescription[]): Promise<Task[]> {
    this.session.assertOpen();
    const descs = validateAll(descriptions, parseTaskDescription, 'TaskDescription');
    const seen = new Set<string>();
    descs.forEach((d, i) => {
      if (d.uid === undefined) return;
      if (this.tasks.has(d.uid) || seen.has(d.uid)) {
        throw new ValidationError(`invalid TaskDescription: /${i}/uid '${d.uid}' is already used`, [
          { path: `/${i}/uid`, message: `must be unique ('${d.uid}' is already used)` },
        ]);
      }
      seen.add(d.uid);
    });
    const now = this.session.clock.now();
    const records: TaskRecord[] = [];
    const notes: Notification[] = [];
    const out: Task[] = [];
    for (const d of descs) {
      const uid = d.uid ?? this.session.nextTaskUid();
      const task = new Task(uid, d);
      this.tasks.set(uid, task);
      out.push(task);
      const rec: TaskRecord = {
        uid,
        attempt: 1,
        state: 'NEW',
        session: this.session.uid,
        description: d,
      };
      notes.push({
        kind: 'task',
        uid,
        attempt: 1,
        state: 'NEW',
        ts: now,
        component: COMPONENTS.taskManager,
      });
      notes.push(transition(rec, 'TMGR_SCHEDULING_PENDING', COMPONENTS.taskManager, now));
      records.push(rec);
    }
    this.session.notify(notes);
    if (records.length > 0) await this.session.pipeline.submit(records);
    return out;
  }

  get(uid: string): Task | undefined {
    return this.tasks.get(uid);
  }

  list(): Task[] {
    return [...this.tasks.values()];
  }

  /** Waits until the tasks (default: all of this manager's) reach one of `states` (default: final). */
  async waitTasks(
    opts: { uids?: string[]; states?: string[]; timeoutMs?: number } = {},
  ): Promise<Task[]> {
    const uids = opts.uids ?? [...this.tasks.keys()];
    await this.waiters.wait(
      uids,
      new Set(opts.states ?? FINALS),
      (u) => this.tasks.get(u)?.state,
      opts.timeoutMs,
      'waitTasks',
    );
    return uids.map((u) => this.tasks.get(u)!);
  }

  /** Cancels tasks (default: all of this manager's) in whatever state they are. */
  async cancelTasks(uids?: string[]): Promise<void> {
    const list = (uids ?? [...this.tasks.keys()]).filter((u) => !this.tasks.get(u)?.final);
    if (list.length === 0) return;
    for (const u of list) this.canceling.add(u);
    this.session.pipeline.cancel(list);
    await this.session.control.publish({ type: 'cancel_tasks', uids: list });
  }

  private ingest(ns: Notification[]): void {
    for (const n of ns) {
      if (n.kind !== 'task') continue;
      const task = this.tasks.get(n.uid);
      if (task === undefined) continue;
      for (const e of this.tracker.ingest(n)) {
        task.state = e.state;
        task.attempt = e.attempt;
        const d = e.notification?.detail;
        if (d !== undefined) {
          if (d.pilot !== undefined) task.pilot = d.pilot;
          if (d.sandbox !== undefined) task.sandbox = d.sandbox;
          if (d.exitCode !== undefined) task.exitCode = d.exitCode;
          if (d.signal !== undefined) task.signal = d.signal;
          if (d.stdout !== undefined) task.stdout = d.stdout;
          if (d.stderr !== undefined) task.stderr = d.stderr;
          if (d.reason !== undefined) task.reason = d.reason;
        }
        const info: StateInfo = { attempt: e.attempt, inferred: e.inferred };
        const ts = e.notification?.ts;
        if (ts !== undefined) info.ts = ts;
        if (d?.reason !== undefined) info.reason = d.reason;
        task.history.push(
          ts !== undefined
            ? { state: e.state, attempt: e.attempt, inferred: e.inferred, ts }
            : { state: e.state, attempt: e.attempt, inferred: e.inferred },
        );
        if (task.final) this.canceling.delete(task.uid);
        this.callbacks.fire(task, e.state, info);
        this.waiters.update(task.uid, e.state);
      }
    }
  }

  /**
   * A pilot ended: tasks its agent never returned and never finalized have lost their holder,
   * so this manager, the owner of last resort, ends them (CANCELED if the pilot was canceled).
   */
  private async recover(pilot: string, state: string, why?: Reason): Promise<void> {
    try {
      await this.session.drained();
      const now = this.session.clock.now();
      const final = state === 'CANCELED' ? 'CANCELED' : 'FAILED';
      const notes: Notification[] = [];
      for (const uid of this.session.pipeline.unreturned(pilot)) {
        const task = this.tasks.get(uid);
        if (task === undefined || this.tracker.current(uid)?.final === true) continue;
        const r = makeReason(
          final === 'CANCELED' ? 'E_CANCELED' : 'E_PILOT_ENDED',
          `pilot ${pilot} ended (${state}${why !== undefined ? `: ${why.message}` : ''}) before the task finished`,
          TASK_RECOVERY_OWNER,
        );
        notes.push({
          kind: 'task',
          uid,
          attempt: task.attempt,
          state: final,
          ts: now,
          component: TASK_RECOVERY_OWNER,
          detail: { pilot, reason: r },
        });
      }
      if (notes.length > 0) {
        this.log.warn('finalizing tasks of an ended pilot', { pilot, count: notes.length });
        this.session.notify(notes);
      }
    } catch (e) {
      this.log.error('recovery of an ended pilot failed', { pilot, ...errorMeta(e) });
    }
  }
}
