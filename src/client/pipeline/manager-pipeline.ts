import type { Reason, TaskDescription, TaskRecord, WaitReason } from '../../generated';
import type { Clock } from '../../lib/clock';
import type { Logger } from '../../lib/logger';
import type { Notification } from '../../states/notification';
import { PIPELINE, hopOf, type Hop } from '../../states/pipeline';
import type { TaskFinal, TaskReady } from '../../states/task-final';
import {
  COMPONENTS,
  isFinalTaskState,
  type AbortedTaskState,
  type FinalTaskState,
  type TaskComponent,
} from '../../states/task-model';
import { ManagerInputStagerCore } from '../../components/manager-input-stager/core';
import type { StagingLookup } from '../../components/manager-input-stager/resolve';
import { ManagerInputStagerShell, type Given } from '../../components/manager-input-stager/shell';
import { ManagerOutputStagerCore } from '../../components/manager-output-stager/core';
import { ManagerOutputStagerShell } from '../../components/manager-output-stager/shell';
import { ManagerSchedulerCore, type PilotCapacity } from '../../components/manager-scheduler/core';
import { ManagerSchedulerShell } from '../../components/manager-scheduler/shell';
import { QueueSet } from '../../components/shared/queue-set';
import { serviceEnd, type ServiceEnd } from '../../components/shared/service-ends';
import type { Intake } from '../../components/shared/shell';
import type { ServerSecurity } from '../../transport/curve';
import type { LocalQueue } from '../../transport/local-queue';
import { returnPlan } from './pilot-recovery';
import { recordOf } from './task-record';
import type { Task } from '../task';

/** What the pipeline reads of the session's tasks. */
export interface PipelineTasks {
  /** The final state a task has reached, as delivered (dependencies read it). */
  finalOf(uid: string): FinalTaskState | undefined;
  /** A task's description: agents hand tasks back without it. */
  descriptionOf(uid: string): TaskDescription | undefined;
  /** The task, as the client knows it (a take-back reads its state and attempt). */
  get(uid: string): Task | undefined;
}

/**
 * The client-side components: ManagerScheduler -> ManagerInputStager -> (agents) ->
 * ManagerOutputStager, wired from the pipeline table (the client's hops). Hops inside this
 * process hand records over by reference (validated once, at the API); the queue back from
 * each pilot's agent is a socket of this process that the agent connects to, and validates
 * what arrives.
 */
export class ManagerPipeline {
  private readonly queues = new QueueSet();
  /**
   * A ready service's attempt came back from its pilot (it stopped serving): every agent is
   * told (runtime.ts), so that what it let go does not start with its endpoint anywhere.
   */
  serviceGone: (uid: string, end: ServiceEnd) => void = () => {};
  private scheduler!: ManagerSchedulerCore;
  private inputStager!: ManagerInputStagerCore;
  private inputShell!: ManagerInputStagerShell;
  private outputStager!: ManagerOutputStagerCore;
  private toScheduler!: LocalQueue<TaskRecord>;
  /** The ManagerOutputStager's intake, for the queue back from each pilot's agent. */
  private outputIntake!: Intake;

  constructor(
    private readonly notify: (ns: Notification[]) => void,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** Where agent-facing queues listen, e.g. `tcp://127.0.0.1:0`. */
    private readonly listenAt: string,
    /** The session task records must name. */
    private readonly session: string,
    /** What the pipeline reads of the session's tasks. */
    private readonly tasks: PipelineTasks,
    /** What staging directives are resolved against (the client's cwd, other tasks' sandboxes). */
    private readonly staging: StagingLookup,
    /** The pilots' file channels: what each task may transfer. */
    private readonly files?: ConstructorParameters<typeof ManagerInputStagerShell>[4],
  ) {}

  start(): void {
    const logOf = (c: TaskComponent): Logger => this.log.child({ component: c });
    const C = COMPONENTS;
    this.toScheduler = this.queues.local<TaskRecord>(C.managerScheduler, logOf(C.managerScheduler));
    const toStaging = this.queues.local<TaskRecord>(
      C.managerInputStager,
      logOf(C.managerInputStager),
    );
    this.scheduler = new ManagerSchedulerCore(
      new ManagerSchedulerShell(logOf(C.managerScheduler), this.notify, toStaging),
      this.clock,
      (uid) => this.tasks.finalOf(uid),
    );
    const retry = (ts: TaskRecord[]): void => void this.submit(ts);
    this.inputShell = new ManagerInputStagerShell(
      logOf(C.managerInputStager),
      this.notify,
      this.listenAt,
      retry,
      this.files,
    );
    this.inputStager = new ManagerInputStagerCore(this.inputShell, this.clock, this.staging);
    // the final word is heard by the scheduler at once: a dependent need not wait for the store
    const ended = (ns: Notification[]): void => {
      this.notify(ns);
      const finals: TaskFinal[] = [];
      for (const n of ns) {
        if (n.kind === 'task' && isFinalTaskState(n.state as FinalTaskState)) {
          finals.push({ uid: n.uid, attempt: n.attempt, state: n.state as FinalTaskState });
        }
      }
      if (finals.length > 0) this.scheduler.onTasksFinal(finals);
    };
    this.outputStager = new ManagerOutputStagerCore(
      new ManagerOutputStagerShell(ended, retry),
      this.clock,
    );

    const handlers: Partial<Record<TaskComponent, (ts: TaskRecord[]) => void>> = {
      ManagerScheduler: (ts) => this.scheduler.onTasks(ts),
      ManagerInputStager: (ts) => this.inputStager.onTasks(ts),
      ManagerOutputStager: (ts) => {
        if (this.awaiting.size > 0) for (const t of ts) this.awaiting.delete(t.uid);
        for (const t of ts) if (t.sandbox !== undefined) this.staging.ranIn(t.uid, t.sandbox);
        this.inputShell.returned(ts);
        for (const t of ts) {
          const end = serviceEnd(t);
          if (end !== undefined) this.serviceGone(t.uid, end);
        }
        // their ends first: the dependents they release may take the room they leave
        this.outputStager.onTasks(ts);
        this.scheduler.onReturned(ts);
      },
    };
    const intake = (hop: Hop): Intake => ({
      component: hop.component,
      arrives: hop.arrives,
      handle: handlers[hop.component]!,
      notify: this.notify,
      now: () => this.clock.now(),
    });
    for (const hop of PIPELINE) {
      if (hop.side !== 'client') continue;
      if (hop.component === C.managerScheduler) {
        this.queues.consumeLocal(this.toScheduler, intake(hop), logOf(hop.component));
      } else if (hop.component === C.managerInputStager) {
        this.queues.consumeLocal(toStaging, intake(hop), logOf(hop.component));
      } else {
        // agents hand tasks back without their descriptions: the client holds them
        this.outputIntake = { ...intake(hop), describe: (uid) => this.tasks.descriptionOf(uid) };
      }
    }
  }

  /** Hands new tasks (in TMGR_SCHEDULING_PENDING) to the ManagerScheduler. */
  submit(tasks: TaskRecord[]): Promise<void> {
    return this.toScheduler.send(tasks);
  }

  /**
   * Creates the queues of a pilot's agent: the one it pulls its tasks from and the one it hands
   * them back on, each admitting that pilot alone (`security`), and returns their addresses
   * (`at`: the ones its agent already knows, for a resumed session). What comes back must be a
   * task given to that pilot; anything else is refused and counted.
   */
  async addPilotQueues(
    pilot: string,
    security: ServerSecurity | undefined,
    at: { agentInput?: string | undefined; managerOutput?: string | undefined } = {},
  ): Promise<{ agentInput: string; managerOutput: string }> {
    const agentInput = await this.inputShell.addPilot(pilot, at.agentInput, security);
    // the agent's PUSH connects to this process's PULL, bound here: one producer, one consumer
    const session = this.session;
    const managerOutput = await this.queues.consumeBound(
      at.managerOutput ?? this.listenAt,
      { ...this.outputIntake, admit: (item) => this.admitFrom(pilot, session, item) },
      this.log.child({ component: COMPONENTS.managerOutputStager, pilot }),
      security,
    );
    return { agentInput, managerOutput };
  }

  /**
   * The pilot's agent died and was started again in its allocation (agent.restarts): what it
   * may never have received (the client saw no word of it from the agent) is sent again; the
   * new agent drops what its journal says the one before it had.
   */
  agentRestarted(pilot: string): void {
    const sent = hopOf(COMPONENTS.agentInputStager).arrives;
    const again: TaskRecord[] = [];
    for (const g of this.inputShell.outstandingOf(pilot)) {
      const t = this.tasks.get(g.uid);
      if (t?.attempt === g.attempt && !t.final && t.state === sent) {
        again.push(recordOf(t, sent, this.session));
      }
    }
    this.log.info('agent started again: tasks it may not have are sent again', {
      pilot,
      count: again.length,
    });
    this.inputShell.adopt(pilot, [], again);
  }

  /** A resumed session: these tasks (attempts) were given to `pilot` before. */
  own(pilot: string, tasks: readonly { uid: string; attempt?: number }[]): void {
    this.inputShell.own(pilot, tasks);
  }

  /** Was this attempt of `uid` given to `pilot`, and not fenced since? (What its agent may speak of.) */
  owns(pilot: string, uid: string, attempt?: number): boolean {
    return this.inputShell.owns(pilot, uid, attempt);
  }

  /** These tasks start a new attempt: what `pilot` still says of the old one is refused. */
  fence(pilot: string, uids: readonly string[]): void {
    this.inputShell.fence(pilot, uids);
  }

  /**
   * A live pilot's agent gave back tasks it can no longer start before its drain point (or
   * that a service let go which stopped serving): their room there is free, what it says of
   * those attempts is refused from now on, and each starts again as a new attempt (returnPlan).
   */
  takeBack(pilot: string, given: readonly { uid: string; attempt: number }[], why: Reason): void {
    const now = this.clock.now();
    const taskOf = (uid: string): Task | undefined => this.tasks.get(uid);
    const owns = (p: string, uid: string, attempt: number): boolean => this.owns(p, uid, attempt);
    const plan = returnPlan(pilot, given, why, taskOf, owns, this.session, now);
    this.refusedCount += plan.refused;
    if (plan.retry.length === 0) return;
    const uids = plan.retry.map((t) => t.uid);
    this.log.info('tasks given back by a pilot start again', {
      pilot,
      count: uids.length,
      code: why.code,
    });
    this.fence(pilot, uids);
    this.inputShell.returned(uids.map((uid) => ({ uid, pilot })));
    // given back because a service they were let go by stopped serving: it is not ready now
    const dead = (why.code === 'E_DEPENDENCY' ? why.detail : undefined) as
      { dependency?: unknown; attempt?: unknown } | undefined;
    if (typeof dead?.dependency === 'string' && typeof dead.attempt === 'number') {
      this.scheduler.onServiceGone(dead.dependency, dead.attempt);
    }
    this.scheduler.onReturned(uids.map((uid) => ({ uid })));
    this.notify(plan.notes);
    this.retry(plan.retry);
  }

  /** Next attempts (at TMGR_SCHEDULING_PENDING) decided outside the pipeline (a lost pilot). */
  retry(tasks: TaskRecord[]): void {
    void this.submit(tasks);
  }

  /** Task records the agents' queues refused so far. */
  refused(): number {
    return this.refusedCount;
  }

  private refusedCount = 0;

  private admitFrom(pilot: string, session: string, item: unknown): string | undefined {
    const problem = this.problemFrom(pilot, session, item);
    if (problem !== undefined) this.refusedCount++;
    return problem;
  }

  private problemFrom(pilot: string, session: string, item: unknown): string | undefined {
    const t = item as {
      uid?: unknown;
      pilot?: unknown;
      session?: unknown;
      attempt?: unknown;
    } | null;
    if (typeof t !== 'object' || t === null || typeof t.uid !== 'string') return 'names no task';
    if (t.session !== session) return `task ${t.uid} names session '${String(t.session)}'`;
    const attempt = typeof t.attempt === 'number' ? t.attempt : -1;
    if (t.pilot !== pilot || !this.owns(pilot, t.uid, attempt)) {
      return `task ${t.uid} (attempt ${String(t.attempt)}) is not held by ${pilot}`;
    }
    return undefined;
  }

  /**
   * A resumed session takes its tasks back where they were: `agent` ones are held by the
   * pilot's agent (the owner of last resort remembers them), `toAgent` ones may have been lost
   * on the way and are sent again (the agent drops ones it already has).
   */
  adopt(pilot: string, tasks: { agent: Given[]; toAgent: TaskRecord[] }): void {
    this.inputShell.adopt(pilot, tasks.agent, tasks.toAgent);
  }

  /**
   * A resumed session's tasks that may have been lost on their way back and whose exit the
   * store told: staged out again (a copy that comes from the agent later is dropped).
   */
  stageOutAgain(tasks: TaskRecord[]): void {
    if (tasks.length > 0) this.outputStager.onTasks(tasks);
  }

  /**
   * A resumed session: tasks whose hand-back its agent may have pushed to the dead client,
   * lost with that process's sockets (uid and attempt). Until the agent's copy comes, the
   * hand-back notification the store gets stands for it (handedBackInStore), whenever it
   * arrives: the agent notifies every hand-back and its UpdateWorkers retry until the store
   * has it.
   */
  awaitHandBacks(tasks: readonly Given[]): void {
    for (const t of tasks) this.awaiting.set(t.uid, t.attempt);
  }

  /** Whether a hand-back notification of this task is to be staged out (see awaitHandBacks). */
  awaitsHandBack(uid: string, attempt: number): boolean {
    return this.awaiting.get(uid) === attempt;
  }

  /**
   * Tasks awaited by a resumed session that the store says their agents handed back (records
   * rebuilt from their hand-back notifications): staged out as if their agent's copy had come.
   * A copy that comes later anyway is dropped by the output stager.
   */
  handedBackInStore(tasks: TaskRecord[]): void {
    const fresh = tasks.filter((t) => this.awaiting.get(t.uid) === t.attempt);
    if (fresh.length === 0) return;
    for (const t of fresh) this.awaiting.delete(t.uid);
    this.log.info('staging out tasks whose hand-back the store told of', {
      count: fresh.length,
    });
    this.inputShell.returned(fresh);
    this.outputStager.onTasks(fresh);
  }

  /** Awaited by a resumed session (uid -> attempt): see awaitHandBacks. */
  private readonly awaiting = new Map<string, number>();

  /** A pilot tasks may go to (`active`: its agent is up). */
  addPilot(p: PilotCapacity & { active?: boolean }): void {
    this.scheduler.onPilotAdded(p);
  }

  /** A pilot's agent is up and reported what it holds: tasks may be bound to it now. */
  pilotActive(p: PilotCapacity): void {
    this.scheduler.onPilotActive(p);
  }

  pilotGone(uid: string, state: string): void {
    this.scheduler.onPilotGone(uid, state);
    this.inputStager.onPilotGone(uid, state);
    this.inputShell.removePilot(uid);
  }

  /** Why the ManagerScheduler holds a task (worked out when asked), if it holds it. */
  whyWaiting(uid: string): WaitReason | undefined {
    return this.scheduler.whyWaiting(uid);
  }

  /** Tasks sent to a pilot's agent that never came back (call once the pilot has ended). */
  unreturned(pilot: string): Given[] {
    return this.inputShell.unreturned(pilot);
  }

  cancel(uids: string[]): void {
    this.scheduler.onCancel(uids);
    this.inputStager.onCancel(uids);
    this.outputStager.onCancel(uids);
  }

  /**
   * Tasks reached a final state, in store order, wherever it was decided: every client
   * component hears of it (what it kept for those tasks can go).
   */
  tasksFinal(finals: readonly TaskFinal[]): void {
    if (finals.length === 0) return;
    this.scheduler.onTasksFinal(finals);
    this.inputStager.onTasksFinal(finals);
    this.outputStager.onTasksFinal(finals);
    this.inputShell.returned(finals);
    if (this.awaiting.size > 0) for (const f of finals) this.awaiting.delete(f.uid);
    for (const l of this.finalListeners) l(finals);
  }

  /** Services became ready: their dependents on 'ready' may go (with their endpoints). */
  tasksReady(ready: readonly TaskReady[]): void {
    if (ready.length > 0) this.scheduler.onTasksReady(ready);
  }

  /** Hears every task-final event after the components did (in store order, in bulks). */
  onTasksFinal(listener: (finals: readonly TaskFinal[]) => void): () => void {
    this.finalListeners.add(listener);
    return () => this.finalListeners.delete(listener);
  }

  private readonly finalListeners = new Set<(finals: readonly TaskFinal[]) => void>();

  shutdown(final: AbortedTaskState, why: Reason): void {
    this.scheduler.onShutdown(final, why);
  }

  async close(): Promise<void> {
    await this.queues.stopReceiving();
    await this.inputShell.close();
    await this.queues.close();
  }
}
