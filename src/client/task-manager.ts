import type { TaskDescription, TaskRecord } from '../generated';
import { TaskEndedError, TimeoutError, UsageError, errorMeta } from '../errors';
import type { Logger } from '../lib/logger';
import { Interner, ownCopy } from '../lib/strings';
import { parseTaskDescription } from '../lib/validate';
import type { Notification } from '../states/notification';
import { StateTracker } from '../states/state-tracker';
import type { TaskFinal } from '../states/task-final';
import { serviceEnvName } from '../components/manager-scheduler/dependencies';
import {
  COMPONENTS,
  FINAL_TASK_STATES,
  isFinalTaskState,
  TASK_MODEL,
  TASK_STATES,
  TASK_RETRY_STATE,
  type TaskState,
} from '../states/task-model';
import { born, taskNotification, transition } from '../components/shared/transition';
import { explainTask, type Explanation } from './tasks/explain';
import { Listeners } from './calls/listeners';
import { managersOf } from './control/managers';
import type { Pilot } from './pilot';
import type { DeliveryCursor } from './resume/delivered';
import { bindRuntime, runtimeOf, type ClientRuntime } from './runtime/runtime';
import type { Session } from './session';
import { Task, type StateInfo } from './task';
import type { TransferListener, TransferProgress } from './files/transfer-progress';
import {
  handBackOf,
  keepHandBack,
  keepLateFacts,
  keepPlace,
  keepOutputNotes,
  planPickUp,
  restartAttempt,
} from './resume/task-pick-up';
import { HANDED_BACK, recordOf } from './pipeline/task-record';
import { tooLargeIssues } from './calls/task-size';
import { uniqueUids } from './calls/unique-uids';
import { validateAll } from './calls/validate-all';
import { Waiters } from './calls/waiters';
import { checkSelection } from './calls/selection';
import { checkDependencies } from './tasks/dependencies';
import { pilotSandboxIn, placeInPilotSandbox, tailTask, type TailOptions } from './tasks/output';

/**
 * Submits tasks to the session's pilots and follows them: every state reaches `onState`
 * callbacks exactly once per attempt, in model order, whatever order notifications arrive in.
 */
export class TaskManager {
  private readonly rt: ClientRuntime; // the session's runtime: what this facade drives
  private readonly tasks = new Map<string, Task>();
  /** Every task of a pilot holds the same copy of its uid. */
  private readonly pilotUids = new Interner();
  private readonly pilotSandbox = (p: string) => pilotSandboxIn(managersOf(this.rt).pilots)(p);
  private readonly tracker = new StateTracker<TaskState>(TASK_MODEL, TASK_RETRY_STATE);
  private readonly callbacks: Listeners<[Task, TaskState, StateInfo]>;
  private readonly waiters = new Waiters<TaskState>();
  /** waitReady: a service is 'ready', or 'final' (ended, ready or not). */
  private readonly readiness = new Waiters<'ready' | 'final'>();
  /** Services whose readiness was passed on, and of which attempt. */
  private readonly announced = new Map<string, number>();
  private readonly log: Logger;
  /** Canceled, not yet final: re-sent to each agent that reports in, since it missed them. */
  private readonly canceling = new Set<string>();
  /** This manager's name in the session's journal. */
  private readonly name: string;
  /** Skips the callbacks a previous client of the session delivered. */
  private readonly delivery: DeliveryCursor;
  private readonly pilotsAdded = new Set<string>();
  /** `onTransfer` listeners; the session's file server is followed from the first one on. */
  private transfers: Listeners<[TransferProgress]> | undefined;

  constructor(session: Session) {
    const rt = (this.rt = runtimeOf(session));
    this.log = rt.log.child({ component: COMPONENTS.taskManager });
    this.callbacks = new Listeners(this.log);
    ({ name: this.name, delivery: this.delivery } = rt.registerManager('tmgr'));
    managersOf(rt).tasks.add(this);
    bindRuntime(this, rt); // what runs over the manager (a router) reaches the session's parts
    if (rt.replayPending) this.adopt();
    rt.onNotifications((ns) => this.ingest(ns));
    rt.control.on((msg) => {
      if (msg.type === 'agent_ready' && this.canceling.size > 0) {
        void rt.control.publish({ type: 'cancel_tasks', uids: [...this.canceling] });
      }
    });
  }

  /** Makes the pilots available to this manager's tasks (round robin over those that fit). */
  addPilots(pilots: Pilot[]): void {
    const fresh = pilots.filter((p) => !this.pilotsAdded.has(p.uid));
    if (fresh.length === 0) return;
    this.rt.journal.append({
      t: 'pilots-added',
      mgr: this.name,
      pilots: fresh.map((p) => p.uid),
    });
    for (const p of fresh) {
      this.pilotsAdded.add(p.uid);
      this.rt.pipeline.addPilot({
        uid: p.uid,
        cores: p.cores,
        gpus: p.gpus,
        nodes: p.labelledNodes(),
        active: p.state === 'PMGR_ACTIVE',
      });
    }
  }

  onState(fn: (task: Task, state: TaskState, info: StateInfo) => void): () => void {
    return this.callbacks.add(fn);
  }

  /**
   * Follows the bytes of this manager's tasks' `transfer` directives (docs/staging.md): each
   * transfer's 'start', 'progress' at most every ~250 ms, then 'done' or 'failed'. Returns how
   * to stop. A callback that throws is logged; the transfer goes on.
   */
  onTransfer(fn: TransferListener): () => void {
    if (this.transfers === undefined) {
      const transfers = (this.transfers = new Listeners(this.log));
      this.rt.links.files.onProgress((p) => {
        if (this.tasks.has(p.task)) transfers.fire(p);
      });
    }
    return this.transfers.add(fn);
  }

  /**
   * Validates every description (a bad one rejects the whole call with each issue's path,
   * e.g. `/3/arguments/0 must be string`), then hands all tasks on in one bulk.
   */
  async submitTasks(descriptions: TaskDescription[]): Promise<Task[]> {
    this.rt.assertOpen();
    const descs = validateAll(
      descriptions,
      parseTaskDescription,
      'TaskDescription',
      { function: { args: true } },
      tooLargeIssues,
    );
    const seen = uniqueUids(descs, (u) => this.rt.tasks.has(u));
    const out = descs.map((d) => new Task(d.uid ?? this.rt.tasks.nextUid((u) => seen.has(u)), d));
    checkDependencies(
      descs,
      out.map((t) => t.uid),
      (u) => {
        const t = this.rt.tasks.get(u);
        return t === undefined ? undefined : (t.description.mode ?? 'executable');
      },
    );
    // before any notification: what the store holds after a crash, the journal holds too; a
    // journal that cannot be written (a full disk) throws, and the tasks are not taken on
    this.rt.journal.append({
      t: 'tasks',
      mgr: this.name,
      tasks: out.map((t) => [t.uid, t.description]),
    });
    this.rt.tasks.add(out);
    for (const task of out) this.tasks.set(task.uid, task);
    await this.schedule(out);
    return out;
  }

  /** Hands tasks (new, or not yet past the client when a previous client died) to the pipeline. */
  private async schedule(tasks: Task[]): Promise<void> {
    if (tasks.length === 0) return;
    const now = this.rt.clock.now();
    const records: TaskRecord[] = [];
    const notes: Notification[] = [];
    for (const task of tasks) {
      const rec: TaskRecord = {
        uid: task.uid,
        attempt: task.attempt,
        state: 'NEW',
        session: this.rt.uid,
        description: task.description,
        seq: task.seq,
      };
      const mode = task.description.mode;
      const tmgr = COMPONENTS.taskManager;
      const birth = taskNotification(task.uid, task.attempt, 'NEW', now, tmgr, undefined, mode);
      born(rec, birth);
      notes.push(birth);
      notes.push(transition(rec, 'TMGR_SCHEDULING_PENDING', COMPONENTS.taskManager, now));
      records.push(rec);
    }
    this.rt.notify(notes);
    await this.rt.pipeline.submit(records);
  }

  /**
   * A resumed session: takes back the tasks and pilots this manager had (from the journal),
   * before the replay rebuilds their states; once caught up, each unfinished task is picked up
   * where it was (see ManagerPipeline.adopt).
   */
  private adopt(): void {
    for (const e of this.rt.resumed) {
      if (e.t === 'tasks' && e.mgr === this.name) {
        const tasks = e.tasks.map(([uid, d]) => new Task(uid, d));
        this.rt.tasks.add(tasks);
        for (const t of tasks) this.tasks.set(t.uid, t);
      } else if (e.t === 'pilots-added' && e.mgr === this.name) {
        for (const p of e.pilots) this.pilotsAdded.add(p);
      } else if (e.t === 'cancel' && e.mgr === this.name) {
        for (const u of e.uids) this.canceling.add(u);
      }
    }
    this.rt.onReplay(
      1,
      () => Promise.resolve(),
      () => void this.pickUp().catch((e: unknown) => this.log.error('resume failed', errorMeta(e))),
    );
  }

  private async pickUp(): Promise<void> {
    const { unsent, byPilot, output, awaiting } = planPickUp(this.tasks.values(), this.rt.uid);
    const active = this.rt.pipeline;
    // at once, in this turn: a hand-back notification delivered after this plan is acted on
    active.awaitHandBacks(awaiting);
    for (const uid of this.pilotsAdded) {
      const pilot = this.rt.pilotCapacity(uid);
      if (pilot !== undefined) active.addPilot(pilot);
    }
    for (const [pilot, tasks] of byPilot) active.adopt(pilot, tasks);
    active.stageOutAgain(output);
    this.log.info('resumed', {
      tasks: this.tasks.size,
      rescheduled: unsent.length,
      withPilots: [...byPilot.values()].reduce((n, p) => n + p.agent.length + p.toAgent.length, 0),
      stagedOut: output.length,
    });
    await this.schedule(unsent);
    // the journal's cancels whose tasks the store does not hold final: the old client's death
    // may have kept them from the pipeline or the agents
    const canceled = [...this.canceling].filter((u) => this.tasks.get(u)?.final === false);
    this.canceling.clear();
    if (canceled.length > 0) await this.applyCancel(canceled);
  }

  get(uid: string): Task | undefined {
    return this.tasks.get(uid);
  }

  list(): Task[] {
    return [...this.tasks.values()];
  }

  /** Where a task of this manager is, and while it waits what for (docs/scheduling.md). */
  explain(uid: string): Explanation {
    const e = this.tasks.has(uid) ? explainTask(this.rt, uid) : undefined;
    if (e === undefined) throw new UsageError(`explain: no task '${uid}' in this task manager`);
    return e;
  }

  /** Waits until the tasks (default: all of this manager's) reach one of `states` (default: final). */
  async waitTasks(
    opts: { uids?: string[]; states?: readonly TaskState[]; timeoutMs?: number } = {},
  ): Promise<Task[]> {
    checkSelection(
      'waitTasks',
      opts,
      (u) => this.tasks.has(u),
      'a task of this manager',
      TASK_STATES,
    );
    // services serve until stopped: a wait for "everything" means the work, not them
    const uids =
      opts.uids ?? [...this.tasks.values()].filter((t) => !isService(t)).map((t) => t.uid);
    await this.rt.replay();
    await this.waiters.wait(
      uids,
      new Set(opts.states ?? FINAL_TASK_STATES),
      (u) => this.tasks.get(u)?.state,
      opts.timeoutMs,
      'waitTasks',
    );
    return uids.map((u) => this.tasks.get(u)!);
  }

  /**
   * Waits until a service task is ready and resolves with its endpoint (`host:port`). Rejects
   * with a TaskEndedError when it ends first (its reason says why: it exited, or was not ready
   * within its startupTimeoutS), and with a TimeoutError after `timeoutMs`.
   */
  async waitReady(uid: string, opts: { timeoutMs?: number } = {}): Promise<string> {
    checkSelection(
      'waitReady',
      { uids: [uid], timeoutMs: opts.timeoutMs },
      (u) => {
        const t = this.tasks.get(u);
        return t !== undefined && isService(t);
      },
      'a service task of this manager',
    );
    await this.rt.replay();
    const task = this.tasks.get(uid)!;
    const now = (): 'ready' | 'final' | undefined =>
      task.final ? 'final' : task.endpoint !== undefined ? 'ready' : undefined;
    await this.readiness
      .wait([uid], READY_OR_FINAL, now, opts.timeoutMs, 'waitReady')
      .catch((e: unknown) => {
        if (!(e instanceof TimeoutError)) throw e;
        const at = `${opts.timeoutMs} ms`;
        throw new TimeoutError(
          `waitReady: service ${uid} is not ready after ${at} (${task.state})`,
        );
      });
    if (task.final) throw new TaskEndedError(uid, task.state, task.reason);
    return task.endpoint!;
  }

  /** A task's stdout (or stderr) as lines; with `follow`, until it ends (see tailTask). */
  tail(uid: string, opts: TailOptions = {}): AsyncGenerator<string, void, undefined> {
    checkSelection('tail', { uids: [uid] }, (u) => this.tasks.has(u), 'a task of this manager');
    const asks = this.rt.links.files.sandbox;
    return tailTask(this.tasks.get(uid)!, (fn) => this.onState(fn), opts, this.pilotSandbox, asks);
  }

  /** Cancels tasks (default: all of this manager's) in whatever state they are. */
  async cancelTasks(uids?: string[]): Promise<void> {
    checkSelection('cancelTasks', { uids }, (u) => this.tasks.has(u), 'a task of this manager');
    const list = (uids ?? [...this.tasks.keys()]).filter((u) => !this.tasks.get(u)?.final);
    if (list.length === 0) return;
    // journaled first: a client killed before the cancel took effect leaves it to its resume
    this.rt.journal.append({ t: 'cancel', mgr: this.name, uids: list });
    await this.applyCancel(list);
  }

  private async applyCancel(uids: string[]): Promise<void> {
    for (const u of uids) this.canceling.add(u);
    this.rt.pipeline.cancel(uids);
    // agents that miss it (not connected yet) get it again when they report in (agent_ready)
    await this.rt.control.publish({ type: 'cancel_tasks', uids });
  }

  private ingest(ns: Notification[]): void {
    const finals: TaskFinal[] = [];
    const handedBack: TaskRecord[] = [];
    const heard = this.callbacks.any;
    const dirs = this.rt.tasks.sandboxDirs;
    for (const n of ns) {
      if (n.kind === 'service') {
        this.serviceReady(n);
        continue;
      }
      if (n.kind !== 'task') continue;
      const task = this.tasks.get(n.uid);
      if (task === undefined) continue;
      let delivered = false;
      for (const e of this.tracker.ingest(n, task.uid)) {
        delivered ||= e.notification === n;
        // a new attempt starts afresh: what the last one left (exit, output, reason) goes
        if (e.attempt > task.attempt) restartAttempt(task);
        task.state = e.state;
        task.attempt = e.attempt;
        const d = e.notification?.detail;
        const retryStart = e.attempt > 1 && e.state === TASK_RETRY_STATE;
        if (d?.retried !== undefined) task.retried = d.retried;
        // a retry's first state tells why the last attempt ended: for callbacks, not the task
        if (d !== undefined && !retryStart) {
          keepPlace(task, d, (p) => this.pilotUids.get(p), dirs);
          if (d.sandbox !== undefined && d.sandbox !== task.sandbox) {
            task.setSandbox(d.sandbox, dirs);
          }
          if (d.output !== undefined) task.output = d.output;
          placeInPilotSandbox(task, d, this.pilotSandbox, dirs);
          if (d.exitCode !== undefined) task.exitCode = d.exitCode;
          if (d.signal !== undefined) task.signal = d.signal;
          if (d.stdout !== undefined) task.stdout = ownCopy(d.stdout);
          if (d.stderr !== undefined) task.stderr = ownCopy(d.stderr);
          keepOutputNotes(task, d);
          if (d.result !== undefined) task.result = d.result;
          if (d.reason !== undefined) task.reason = d.reason;
        }
        const ts = e.ts ?? e.notification?.ts;
        task.record(e.state, e.attempt, e.inferred, ts);
        if (isFinalTaskState(e.state)) {
          this.canceling.delete(task.uid);
          const f: TaskFinal = { uid: task.uid, attempt: e.attempt, state: e.state };
          if (task.pilot !== undefined) f.pilot = task.pilot;
          if (task.reason !== undefined) f.reason = task.reason;
          finals.push(f);
          if (isService(task)) {
            this.announced.delete(task.uid);
            this.readiness.update(task.uid, 'final');
          }
        }
        if (heard) {
          const info: StateInfo = { attempt: e.attempt, inferred: e.inferred };
          if (ts !== undefined) info.ts = ts;
          if (d?.reason !== undefined) info.reason = d.reason;
          this.delivery.deliver(() => this.callbacks.fire(task, e.state, info));
        } else this.delivery.deliver(unheard, false);
        this.waiters.update(task.uid, e.state);
      }
      if (delivered && isService(task)) this.announceReady(task);
      if (!delivered && n.detail !== undefined && n.attempt === task.attempt) {
        keepLateFacts(task, n.detail, (p) => this.pilotUids.get(p), dirs);
        placeInPilotSandbox(task, n.detail, this.pilotSandbox, dirs);
      }
      const back = handBackOf(n);
      if (back !== undefined && !task.final && n.attempt === task.attempt) {
        if (!delivered) keepHandBack(task, back);
        if (this.rt.pipeline.awaitsHandBack(task.uid, n.attempt)) {
          handedBack.push(recordOf(task, HANDED_BACK, this.rt.uid));
        }
      }
    }
    this.delivery.settle();
    this.rt.pipeline.tasksFinal(finals);
    if (handedBack.length > 0) this.rt.pipeline.handedBackInStore(handedBack);
  }

  /** A service's attempt is ready: its endpoint is known, its waiters and dependents go on. */
  private serviceReady(n: Notification): void {
    const task = this.tasks.get(n.uid);
    const endpoint = n.detail?.endpoint;
    if (task === undefined || endpoint === undefined || n.attempt < task.attempt) return;
    task.setReady(n.attempt, endpoint);
    this.announceReady(task);
  }

  /**
   * Passes a service's readiness on once per attempt, when its attempt is the one delivered
   * (a ready report may come before the states of its attempt) and it has not ended.
   */
  private announceReady(task: Task): void {
    const endpoint = task.endpoint;
    if (endpoint === undefined || task.final || this.announced.get(task.uid) === task.attempt) {
      return;
    }
    this.announced.set(task.uid, task.attempt);
    this.readiness.update(task.uid, 'ready');
    const name = serviceEnvName(task.description.name ?? task.uid);
    this.rt.pipeline.tasksReady([{ uid: task.uid, attempt: task.attempt, endpoint, name }]);
  }
}

const READY_OR_FINAL: ReadonlySet<'ready' | 'final'> = new Set(['ready', 'final']);

function isService(t: Task): boolean {
  return t.description.mode === 'service';
}

/** The callback event of a state no callback listens to: counted, nothing to run. */
const unheard = (): void => undefined;
