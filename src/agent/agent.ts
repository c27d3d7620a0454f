import * as os from 'node:os';
import type { AgentConfig, Reason, TaskRecord } from '../generated';
import { errorMeta } from '../errors';
import { systemClock } from '../lib/clock';
import type { Logger } from '../lib/logger';
import type { Notification } from '../states/notification';
import { COMPONENTS } from '../states/task-model';
import { AgentInputStagerCore } from '../components/agent-input-stager/core';
import { AgentOutputStagerCore } from '../components/agent-output-stager/core';
import { AgentSchedulerCore } from '../components/agent-scheduler/core';
import type { ExecutorCore } from '../components/executor/core';
import { launchOptionsFor } from '../components/executor/launch';
import { ExecutorShell } from '../components/executor/shell';
import { reason } from '../components/shared/reasons';
import { QueueSet } from '../components/shared/queue-set';
import { sendLogged } from '../components/shared/shell';
import { Bridge } from '../transport/bridge';
import { CoalescingSender } from '../transport/coalescing-sender';
import { ControlBus } from '../transport/control-bus';
import type { QueueSender } from '../transport/queue';
import { UpdateWorker } from '../updater/update-worker';
import { makeSandboxes, readTails } from './sandbox-io';
import { slurmNodes } from './resources/slurm-env';
import type { NodeResources } from '../components/agent-scheduler/node-state';

type Final = 'DONE' | 'FAILED' | 'CANCELED';

/**
 * Wiring of one pilot's agent: AgentInputStager -> AgentScheduler -> Executor ->
 * AgentOutputStager over in-process queues, UpdateWorkers to the client's store, and the
 * session's control bus for cancel and shutdown. Decisions live in the cores.
 */
export class Agent {
  private readonly queues = new QueueSet();
  private workers: UpdateWorker[] = [];
  private control!: ControlBus;
  private executorShell: ExecutorShell | undefined;
  private input!: AgentInputStagerCore;
  private scheduler!: AgentSchedulerCore;
  private executor!: ExecutorCore;
  private output!: AgentOutputStagerCore;
  private runtimeTimer: NodeJS.Timeout | undefined;
  private nodes: NodeResources[] = [];
  private heartbeatTimer: NodeJS.Timeout | undefined;
  /** Every component's notifications, one message per turn onto the updates queue. */
  private notes: CoalescingSender<Notification> | undefined;
  /** `uid\0attempt` of every task received, so a task sent twice runs once. */
  private readonly received = new Set<string>();
  private lastHeartbeat = Date.now();
  private stopping: Promise<void> | undefined;
  /** Notifications handed to the updates queue, to know when the UpdateWorkers have them all. */
  private notified = 0;
  private resolveDone!: (r: { final: Final; message: string }) => void;
  /** Resolves once the agent has shut down, with the pilot final state it suggests. */
  readonly done = new Promise<{ final: Final; message: string }>((r) => (this.resolveDone = r));

  constructor(
    private readonly cfg: AgentConfig,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    const cfg = this.cfg;
    this.nodes = this.discoverNodes();
    this.log.info('agent resources', { resource: cfg.resource ?? 'local', nodes: this.nodes });
    // UpdateWorkers attach to the updates queue by address (they could run elsewhere); the
    // task hops inside the agent are local queues (LocalQueue: the hot path is their latency)
    const updates = await Bridge.queue(
      `inproc://${cfg.pilot}/updates/in`,
      `inproc://${cfg.pilot}/updates/out`,
    );
    this.queues.addBridges(updates);
    const queueLog = this.log.child({ component: 'queues' });
    const toScheduler = this.queues.local<TaskRecord>('scheduling', queueLog);
    const toExecutor = this.queues.local<TaskRecord>('executing', queueLog);
    const toOutput = this.queues.local<TaskRecord>('staging-output', queueLog);
    const toUnschedule = this.queues.local<{ uid: string }>('unschedule', queueLog);
    const toClient = this.queues.sender(cfg.addresses.managerOutput);
    const toUpdates = this.queues.sender(updates.endpoints.in);

    for (let i = 0; i < (cfg.updateWorkers ?? 2); i++) {
      this.workers.push(
        UpdateWorker.start({
          updatesAddress: updates.endpoints.out,
          storeAddress: cfg.addresses.store,
          logger: this.log.child({ component: 'UpdateWorker', worker: i }),
          name: `${cfg.pilot}.uw${i}`,
        }),
      );
    }
    this.notes = new CoalescingSender<Notification>(toUpdates, (e: unknown) =>
      this.log.error('notify: send failed', errorMeta(e)),
    );
    const notify = (_log: Logger) => (ns: Notification[]) => {
      this.notified += ns.length;
      this.notes!.send(ns);
    };
    const forward = (to: Pick<QueueSender, 'send'>, log: Logger) => (ts: TaskRecord[]) =>
      sendLogged(to, ts, log, 'forward');

    const clock = systemClock;
    const logIn = this.log.child({ component: COMPONENTS.agentInputStager });
    this.input = new AgentInputStagerCore(
      {
        notify: notify(logIn),
        forward: forward(toScheduler, logIn),
        stage: (tasks) => {
          makeSandboxes(tasks, (r) => this.input.onStaged(r));
        },
      },
      clock,
      cfg.sandbox,
    );
    const logSched = this.log.child({ component: COMPONENTS.agentScheduler });
    this.scheduler = new AgentSchedulerCore(
      { notify: notify(logSched), forward: forward(toExecutor, logSched) },
      clock,
      this.nodes,
    );
    const logExec = this.log.child({ component: COMPONENTS.executor });
    this.executorShell = await ExecutorShell.start({
      spawners: cfg.spawners ?? Math.max(1, Math.min(os.cpus().length, cfg.cores)),
      logger: logExec,
      clock,
      killGraceMs: cfg.killGraceMs ?? 3_000,
      launch: launchOptionsFor({
        resource: cfg.resource,
        env: process.env,
        uid: process.getuid?.(),
        nodeName: this.nodeName,
      }),
      notify: notify(logExec),
      forward: forward(toOutput, logExec),
      release: (tasks) =>
        sendLogged(
          toUnschedule,
          tasks.map((t) => ({ uid: t.uid })),
          logExec,
          'release',
        ),
    });
    this.executor = this.executorShell.core;
    const logOut = this.log.child({ component: COMPONENTS.agentOutputStager });
    this.output = new AgentOutputStagerCore(
      {
        notify: notify(logOut),
        forward: forward(toClient, logOut),
        collect: (tasks) => readTails(tasks, (r) => this.output.onCollected(r)),
      },
      clock,
    );

    const intake = (
      component: string,
      arrives: string,
      handle: (t: TaskRecord[]) => void,
      log: Logger,
    ) => ({
      component,
      arrives,
      handle,
      notify: notify(log),
      now: () => clock.now(),
    });
    const C = COMPONENTS;
    this.queues.consume(
      cfg.addresses.agentInput,
      intake(
        C.agentInputStager,
        'AGENT_STAGING_INPUT_PENDING',
        (t) => this.input.onTasks(this.firstSight(t, logIn)),
        logIn,
      ),
      logIn,
    );
    this.queues.consumeLocal(
      toScheduler,
      intake(
        C.agentScheduler,
        'AGENT_SCHEDULING_PENDING',
        (t) => this.scheduler.onTasks(t),
        logSched,
      ),
      logSched,
    );
    this.queues.consumeLocal(
      toExecutor,
      intake(C.executor, 'AGENT_EXECUTING_PENDING', (t) => this.executor.onTasks(t), logExec),
      logExec,
    );
    this.queues.consumeLocal(
      toOutput,
      intake(
        C.agentOutputStager,
        'AGENT_STAGING_OUTPUT_PENDING',
        (t) => this.output.onTasks(t),
        logOut,
      ),
      logOut,
    );
    toUnschedule.consume((released) => this.scheduler.onReleased(released));

    this.control = new ControlBus(
      { in: cfg.addresses.controlIn, out: cfg.addresses.controlOut },
      cfg.session,
      this.log,
    );
    this.control.on((msg) => {
      if (msg.type === 'cancel_tasks') {
        this.input.onCancel(msg.uids);
        this.scheduler.onCancel(msg.uids);
        this.executor.onCancel(msg.uids);
        this.output.onCancel(msg.uids);
      } else if (msg.type === 'heartbeat') {
        this.lastHeartbeat = Date.now();
      } else if (msg.type === 'client_resumed') {
        this.lastHeartbeat = Date.now();
        void this.announce().catch((e: unknown) =>
          this.log.error('agent_ready failed', errorMeta(e)),
        );
      } else if (msg.type === 'shutdown_agent' && msg.pilot === cfg.pilot) {
        void this.shutdown(
          msg.final,
          msg.message ?? `pilot ${msg.final.toLowerCase()} by the client`,
        );
      }
    });
    // The client's silence counts from now: one that dies before the probe below comes back
    // (a busy machine can take seconds to join the pubsub) must not leave us waiting.
    this.watchHeartbeats(cfg.heartbeatTimeoutMs ?? 30_000);
    try {
      await this.control.ready();
    } catch (e) {
      if (this.stopping !== undefined) return; // shut down while starting: that is the news
      throw e;
    }
    this.runtimeTimer = setTimeout(
      () => void this.shutdown('DONE', `runtime limit of ${cfg.runtimeMin} min reached`),
      cfg.runtimeMin * 60_000,
    );
    await this.announce();
    this.log.info('agent ready', { pilot: cfg.pilot, cores: cfg.cores, gpus: cfg.gpus });
  }

  /** Tells the client what this pilot holds (at start, and to a client that resumed). */
  private announce(): Promise<void> {
    return this.control.publish({
      type: 'agent_ready',
      pilot: this.cfg.pilot,
      nodes: this.nodes.map((n) => ({ name: n.name, cores: n.cores, gpus: n.gpus })),
    });
  }

  /**
   * Drops tasks this agent already received: a resumed client sends again the ones it cannot
   * tell arrived (AGENT_STAGING_INPUT_PENDING when it died).
   */
  private firstSight(tasks: TaskRecord[], log: Logger): TaskRecord[] {
    const fresh = tasks.filter((t) => {
      const key = `${t.uid}\u0000${t.attempt}`;
      if (this.received.has(key)) return false;
      this.received.add(key);
      return true;
    });
    if (fresh.length < tasks.length) {
      log.info('dropped tasks received twice', { count: tasks.length - fresh.length });
    }
    return fresh;
  }

  /**
   * Stops taking tasks, ends every task the agent holds (FAILED, or CANCELED when the pilot is
   * canceled), kills their processes, flushes notifications to the store, then resolves `done`.
   * `storeGone`: the client, and the store it hosts, went away: no ack is waited for.
   */
  shutdown(final: Final, message: string, opts: { storeGone?: boolean } = {}): Promise<void> {
    this.stopping ??= this.doShutdown(final, message, opts.storeGone === true);
    return this.stopping;
  }

  private async doShutdown(final: Final, message: string, storeGone: boolean): Promise<void> {
    this.log.info('agent shutting down', { final, message });
    clearTimeout(this.runtimeTimer);
    clearInterval(this.heartbeatTimer);
    await this.queues.stopReceiving();
    const taskFinal = final === 'CANCELED' ? 'CANCELED' : 'FAILED';
    const why: Reason = reason(
      final === 'CANCELED' ? 'E_CANCELED' : 'E_PILOT_ENDED',
      `pilot ${this.cfg.pilot} ended before the task finished: ${message}`,
      'Agent',
    );
    for (const core of [this.input, this.scheduler, this.executor, this.output]) {
      try {
        core?.onShutdown(taskFinal, why);
      } catch (e) {
        this.log.error('shutdown of a component failed', errorMeta(e));
      }
    }
    await this.executorShell
      ?.close()
      .catch((e: unknown) => this.log.error('spawner pool close failed', errorMeta(e)));
    this.notes?.flush();
    await this.queues.closeSenders();
    await this.updatesPulled(storeGone ? 200 : 2_000);
    await Promise.all(this.workers.map((w) => (storeGone ? w.close(200) : w.close())));
    await this.queues.close();
    await this.control
      ?.publish({ type: 'agent_final', pilot: this.cfg.pilot, final, message })
      .catch(() => undefined);
    await this.control?.close();
    this.resolveDone({ final, message });
  }

  /** An agent whose client has gone silent drains and exits instead of running on alone. */
  private watchHeartbeats(timeoutMs: number): void {
    if (timeoutMs <= 0) return;
    this.lastHeartbeat = Date.now();
    this.heartbeatTimer = setInterval(
      () => {
        const silent = Date.now() - this.lastHeartbeat;
        if (silent > timeoutMs) {
          void this.shutdown(
            'FAILED',
            `lost the client: no heartbeat for ${Math.round(silent / 1000)} s`,
            { storeGone: true },
          );
        }
      },
      Math.min(1_000, Math.max(50, timeoutMs / 4)),
    );
  }

  /** Memory the pilot gives to tasks: as configured, else the machine's. */
  private memMb(): number {
    return this.cfg.memMb ?? Math.floor(os.totalmem() / 2 ** 20);
  }

  /** The nodes this agent holds: its own machine, or the nodes of its Slurm job. */
  private discoverNodes(): NodeResources[] {
    const cfg = this.cfg;
    if (cfg.resource === 'slurm') {
      return slurmNodes(process.env, {
        gpusPerNode: cfg.gpus,
        ...(cfg.memMb !== undefined ? { memMbPerNode: cfg.memMb } : {}),
      });
    }
    return [{ name: this.nodeName, cores: cfg.cores, gpus: cfg.gpus, memMb: this.memMb() }];
  }

  /** The node the agent runs on, as its scheduler names it. */
  private get nodeName(): string {
    return this.cfg.resource === 'slurm'
      ? (process.env.SLURMD_NODENAME ?? os.hostname())
      : os.hostname();
  }

  /** Waits (bounded) until the UpdateWorkers have pulled every notification sent to them. */
  private async updatesPulled(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const pulled = (): number =>
      this.workers.reduce((n, w) => n + w.stats().received + w.stats().invalid, 0);
    while (pulled() < this.notified && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 5));
    }
  }
}
