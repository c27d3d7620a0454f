import * as os from 'node:os';
import type { AgentConfig, TaskRecord } from '../generated';
import { coerceError, errorMeta } from '../errors';
import { systemClock } from '../lib/clock';
import type { Logger } from '../lib/logger';
import type { Notification } from '../states/notification';
import { COMPONENTS } from '../states/task-model';
import { AgentInputStagerShell } from '../components/agent-input-stager/shell';
import { AgentOutputStagerShell } from '../components/agent-output-stager/shell';
import { AgentSchedulerShell } from '../components/agent-scheduler/shell';
import { ExecutorCore } from '../components/executor/core';
import { SpawnerPool } from '../components/executor/spawner-pool';
import { QueueSet } from '../components/shared/queue-set';
import { sendLogged } from '../components/shared/shell';
import { Bridge } from '../transport/bridge';
import { ControlBus } from '../transport/control-bus';
import type { QueueSender } from '../transport/queue';
import { UpdateWorker } from '../updater/update-worker';
import { FirstSight } from './first-sight';
import type { AgentFinal } from './lifecycle/effects';
import { AgentLifecycleShell, type AgentParts } from './lifecycle/shell';
import { AgentNotifications } from './notifications';
import { agentNodeName, discoverNodes } from './resources/nodes';
import { AgentTaskQueues } from './task-queues';
import type { NodeResources } from '../components/agent-scheduler/node-state';

/** How long an exit by a signal waits for a shutdown of the agent it may be part of. */
const SIGNALED_EXIT_GRACE_MS = 250;

/**
 * Wiring of one pilot's agent: AgentInputStager -> AgentScheduler -> Executor ->
 * AgentOutputStager over the queues of the pipeline table, UpdateWorkers to the client's
 * store, and the session's control bus for cancel, heartbeats and shutdown. Decisions live in
 * the cores: the components' and AgentLifecycleCore's (when and in which order to stop).
 */
export class Agent {
  private readonly queues = new QueueSet();
  private workers: UpdateWorker[] = [];
  private control: ControlBus | undefined;
  private pool!: SpawnerPool;
  private input: AgentInputStagerShell | undefined;
  private scheduler: AgentSchedulerShell | undefined;
  private executor!: ExecutorCore;
  private output: AgentOutputStagerShell | undefined;
  private nodes: NodeResources[] = [];
  private notes: AgentNotifications | undefined;
  private readonly firstSight = new FirstSight();
  private readonly lifecycle: AgentLifecycleShell;
  /** Resolves once the agent has shut down, with the pilot final state it suggests. */
  readonly done: Promise<{ final: AgentFinal; message: string }>;

  constructor(
    private readonly cfg: AgentConfig,
    private readonly log: Logger,
  ) {
    this.lifecycle = new AgentLifecycleShell(() => this.parts(), log, systemClock, {
      pilot: cfg.pilot,
      heartbeatTimeoutMs: cfg.heartbeatTimeoutMs ?? 30_000,
      runtimeMin: cfg.runtimeMin,
    });
    this.done = this.lifecycle.done;
  }

  /** Builds and connects everything; a failure to start shuts the agent down (FAILED). */
  async start(): Promise<void> {
    try {
      await this.wire();
    } catch (e) {
      this.lifecycle.core.onStartFailed(coerceError(e).message);
      throw e;
    }
  }

  /**
   * Asks for a shutdown (the first cause wins) and resolves once it is complete.
   * `storeGone`: the client, and the store it hosts, went away: no ack is waited for.
   */
  shutdown(final: AgentFinal, message: string, opts: { storeGone?: boolean } = {}): Promise<void> {
    this.lifecycle.core.onShutdownRequested(final, message, opts.storeGone === true);
    return this.done.then(() => undefined);
  }

  private async wire(): Promise<void> {
    const cfg = this.cfg;
    this.nodes = discoverNodes(cfg);
    this.log.info('agent resources', { resource: cfg.resource ?? 'local', nodes: this.nodes });
    // UpdateWorkers attach to the updates queue by address (they could run elsewhere); the
    // task hops inside the agent are local queues (LocalQueue: the hot path is their latency)
    const updates = await Bridge.queue(
      `inproc://${cfg.pilot}/updates/in`,
      `inproc://${cfg.pilot}/updates/out`,
    );
    this.queues.addBridges(updates);
    const queueLog = this.log.child({ component: 'queues' });
    const hops = new AgentTaskQueues(this.queues, queueLog);
    const C = COMPONENTS;
    const toScheduler = hops.into(C.agentScheduler);
    const toExecutor = hops.into(C.executor);
    const toOutput = hops.into(C.agentOutputStager);
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
    const notes = new AgentNotifications(toUpdates, this.log);
    this.notes = notes;
    const notify = (_log: Logger) => (ns: Notification[]) => notes.send(ns);
    const forward = (to: Pick<QueueSender, 'send'>, log: Logger) => (ts: TaskRecord[]) =>
      sendLogged(to, ts, log, 'forward');

    const clock = systemClock;
    const logIn = this.log.child({ component: C.agentInputStager });
    this.input = new AgentInputStagerShell(
      { notes, next: toScheduler, log: logIn, clock },
      cfg.sandbox,
    );
    const logSched = this.log.child({ component: C.agentScheduler });
    this.scheduler = new AgentSchedulerShell(
      { notes, next: toExecutor, log: logSched, clock },
      this.nodes,
    );
    const logExec = this.log.child({ component: COMPONENTS.executor });
    this.pool = await SpawnerPool.start({
      count: cfg.spawners ?? Math.max(1, Math.min(os.cpus().length, cfg.cores)),
      logger: logExec,
      handlers: {
        started: (evs) => this.executor.onStartedBulk(evs),
        exited: (evs) => {
          const clean = evs.filter((e) => e.signal === null);
          const signaled = evs.filter((e) => e.signal !== null);
          if (clean.length > 0) this.executor.onExitedBulk(clean);
          // A batch system's cancel (scancel) signals every process of the job at once: the
          // tasks may die before this agent's own SIGTERM handler runs. Exits by a signal wait
          // a moment, so that such a task ends with its pilot's shutdown, not as a failure.
          if (signaled.length > 0) {
            setTimeout(() => {
              if (this.stopping === undefined) this.executor.onExitedBulk(signaled);
            }, SIGNALED_EXIT_GRACE_MS);
          }
        },
        failed: (evs) => {
          for (const ev of evs) this.executor.onSpawnFailed(ev.uid, ev);
        },
      },
    });
    this.executor = new ExecutorCore(
      {
        notify: notify(logExec),
        forward: forward(toOutput, logExec),
        spawn: (spec) => this.pool.spawn(spec),
        kill: (uid, signal) => this.pool.kill(uid, signal),
        release: (tasks) =>
          sendLogged(
            toUnschedule,
            tasks.map((t) => ({ uid: t.uid })),
            logExec,
            'release',
          ),
      },
      clock,
      {
        killGraceMs: cfg.killGraceMs ?? 3_000,
        // OpenMPI's mpirun refuses to run as root without --allow-run-as-root.
        launch: {
          mpirun: 'mpirun',
          asRoot: process.getuid?.() === 0,
          ...(cfg.resource === 'slurm'
            ? {
                slurm: {
                  srun: 'srun',
                  node: this.nodeName,
                  gpuGres:
                    process.env.SLURM_JOB_GPUS !== undefined ||
                    process.env.SLURM_GPUS_ON_NODE !== undefined,
                },
              }
            : {}),
        },
      },
    );
    const logOut = this.log.child({ component: C.agentOutputStager });
    this.output = new AgentOutputStagerShell({ notes, next: toClient, log: logOut, clock });

    const input = this.input.core;
    const scheduler = this.scheduler.core;
    const output = this.output.core;
    hops.connect(
      cfg.addresses.agentInput,
      {
        [C.agentInputStager]: {
          handle: (t: TaskRecord[]) => input.onTasks(this.firstSight.filter(t, logIn)),
          log: logIn,
        },
        [C.agentScheduler]: { handle: (t: TaskRecord[]) => scheduler.onTasks(t), log: logSched },
        [C.executor]: { handle: (t: TaskRecord[]) => this.executor.onTasks(t), log: logExec },
        [C.agentOutputStager]: { handle: (t: TaskRecord[]) => output.onTasks(t), log: logOut },
      },
      (ns) => notes.send(ns),
      () => clock.now(),
    );
    toUnschedule.consume((released) => scheduler.onReleased(released));

    const control = new ControlBus(
      { in: cfg.addresses.controlIn, out: cfg.addresses.controlOut },
      cfg.session,
      this.log,
    );
    this.control = control;
    const life = this.lifecycle.core;
    control.on((msg) => {
      switch (msg.type) {
        case 'cancel_tasks':
          for (const c of [input, scheduler, this.executor, output]) c.onCancel(msg.uids);
          return;
        case 'heartbeat':
          return life.onHeartbeat();
        case 'client_resumed':
          life.onHeartbeat();
          return void this.announce().catch((e: unknown) =>
            this.log.error('agent_ready failed', errorMeta(e)),
          );
        case 'shutdown_agent':
          return life.onClientShutdown(msg);
        case 'agent_ready':
        case 'agent_final':
        case 'probe':
          return; // what agents say, or the bus's own
      }
    });
    life.onStart();
    try {
      await control.ready();
    } catch (e) {
      if (life.stopping) return; // shut down while starting: that is the news
      throw e;
    }
    life.onControlReady();
    await this.announce();
    this.log.info('agent ready', { pilot: cfg.pilot, cores: cfg.cores, gpus: cfg.gpus });
  }

  /** What a shutdown takes apart, as far as it was built. */
  private parts(): AgentParts {
    return {
      queues: this.queues,
      notes: this.notes,
      workers: this.workers,
      components: [this.input?.core, this.scheduler?.core, this.executor, this.output?.core],
      pool: this.pool,
      control: this.control,
    };
  }

  /** Tells the client what this pilot holds (at start, and to a client that resumed). */
  private announce(): Promise<void> {
    return this.control!.publish({
      type: 'agent_ready',
      pilot: this.cfg.pilot,
      nodes: this.nodes.map((n) => ({ name: n.name, cores: n.cores, gpus: n.gpus })),
    });
  }

  /** For the executor's signaled-exit grace (moves into the ExecutorCore at merge). */
  private get stopping(): true | undefined {
    return this.lifecycle.core.stopping ? true : undefined;
  }

  /** The node the agent runs on, as its scheduler names it. */
  private get nodeName(): string {
    return agentNodeName(this.cfg);
  }
}
