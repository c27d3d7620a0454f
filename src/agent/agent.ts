import * as os from 'node:os';
import * as path from 'node:path';
import type { AgentConfig, TaskRecord } from '../generated';
import { coerceError, errorMeta } from '../errors';
import { systemClock } from '../lib/clock';
import { streamDirOf } from '../lib/stream-cursor';
import type { Logger } from '../lib/logger';
import { COMPONENTS } from '../states/task-model';
import { DEFAULT_OUTPUT } from '../components/agent-input-stager/core';
import { taskDirRoot } from './task-dirs';
import { AgentInputStagerShell } from '../components/agent-input-stager/shell';
import { AgentOutputStagerShell } from '../components/agent-output-stager/shell';
import { AgentSchedulerShell } from '../components/agent-scheduler/shell';
import { needsLauncher } from '../components/executor/launch';
import { ExecutorShell } from '../components/executor/shell';
import {
  DEFAULT_OUTPUT_CAP_BYTES,
  DEFAULT_OUTPUT_DISK_BYTES,
} from '../components/executor/process/spawner-pool-options';
import { QueueSet } from '../components/shared/queue-set';
import { sendLogged } from '../components/shared/shell';
import type { ControlBus } from '../transport/control-bus';
import { BUSY_GAP_MS, MAX_BUSY_GAP_MS } from '../transport/send-gap';
import type { MongoStore } from '../updater/mongodb/store';
import { mongoStoreModule } from '../updater/mongodb/load';
import { UpdateWorker } from '../updater/update-worker';
import { agentWorkerOptions } from './worker-options';
import { AGENT_END_FILE } from '../components/pilot-launcher/launcher';
import { FirstSight } from './first-sight';
import type { AgentFinal } from './lifecycle/effects';
import { AgentLifecycleShell, type AgentParts } from './lifecycle/shell';
import { CLIENT_TIMEOUT_MS } from './lifecycle/core';
import { FileChannel } from './file-channel';
import { AgentNotifications } from './notifications';
import { JOB_END_MARGIN_MS } from './resources/allocation';
import { launchSetup } from './resources/launch-setup';
import { readAllocation } from './resources/registry';
import { AgentTaskQueues } from './task-queues';
import { relocationFor } from './relocation/for-config';
import type { RelocationShell } from './relocation/shell';
import { releasedOf, type Released } from '../components/agent-scheduler/dead-services';
import type { NodeResources } from '../components/agent-scheduler/node-state';
import { labelsOfNode } from '../components/shared/node-labels';
import { Uplink } from './uplink';
import { subAgentRunner, subAgentsHere } from './subagents/start';
import { agentReady } from './agent-ready';
import { linkControl } from './control-link';
import { agentStartup } from './startup-phases';
import { openAgentJournal, requeued, type AgentJournal } from './journal/journal';

/**
 * How long a spawner helper with follow-on starts queued holds its events: its tasks start
 * without the agent, so the agent need not wake for every exit (FOLLOW_COVER_MS covers it).
 */
const HELPER_HOLD_MS = 3;

/**
 * Wiring of one pilot's agent: AgentInputStager -> AgentScheduler -> Executor ->
 * AgentOutputStager over the queues of the pipeline table, UpdateWorkers to the client's
 * store, and the session's control bus for cancel, heartbeats and shutdown. Decisions live in
 * the cores: the components' and AgentLifecycleCore's (when and in which order to stop).
 */
export class Agent {
  private readonly queues = new QueueSet();
  private workers: UpdateWorker[] = [];
  /** The session's MongoDB store, where it has one (the workers write to it themselves). */
  private mongo: MongoStore | undefined;
  private control: ControlBus | undefined;
  private input: AgentInputStagerShell | undefined;
  private scheduler: AgentSchedulerShell | undefined;
  private executor: ExecutorShell | undefined;
  private output: AgentOutputStagerShell | undefined;
  private nodes: NodeResources[] = [];
  /** What the agent found wrong with the pilot's resources at start, told to the client. */
  private warnings: string[] = [];
  private readonly uplink: Uplink;
  private notes: AgentNotifications | undefined;
  private files: FileChannel | undefined;
  /** A MongoDB session's: finds where a silent client listens now, and moves there. */
  private relocation: RelocationShell | undefined;
  private readonly firstSight = new FirstSight();
  /** What the agent holds, for the next one if it dies (agent.restarts > 0). */
  private journal: AgentJournal | undefined;
  /** Its sub-agents silent now, longest first (said with each heartbeat). */
  private silentParts: { part: string; since: number }[] = [];
  private readonly lifecycle: AgentLifecycleShell;
  /** Resolves once the agent has shut down, with the pilot final state it suggests. */
  readonly done: Promise<{ final: AgentFinal; message: string }>;

  constructor(
    private readonly cfg: AgentConfig,
    private readonly log: Logger,
    /** The config's file: per-node sub-agents read it (agent.subAgents). */
    private readonly configFile?: string,
    /** Which start of the pilot's agent this is (0: the first; agent.restarts). */
    private readonly restart = 0,
  ) {
    this.lifecycle = new AgentLifecycleShell(() => this.parts(), log, systemClock, {
      silentParts: () => this.silentParts,
      pilot: cfg.pilot,
      heartbeatTimeoutMs: cfg.heartbeatTimeoutMs ?? CLIENT_TIMEOUT_MS,
      ...(cfg.clientGraceMs !== undefined ? { clientGraceMs: cfg.clientGraceMs } : {}),
      runtimeMin: cfg.runtimeMin,
      signalBeforeEnd: cfg.signalBeforeEnd,
      storeInClient: cfg.mongodb === undefined,
      endFile: path.join(cfg.sandbox, AGENT_END_FILE),
    });
    this.done = this.lifecycle.done;
    this.uplink = new Uplink(cfg.pilot, log, () => this.control);
  }

  /**
   * The `transfer` staging action over the session's connection (the pilot's file channel),
   * for the stagers; undefined before start() and when the client gave no file address.
   */
  get transfers(): FileChannel | undefined {
    return this.files;
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
    // where the agent runs, read once: its nodes, its end, how its tasks may start
    const allocation = readAllocation(cfg);
    // the pilot's labels on every node, a node's own over them (tasks' placement.selector)
    this.nodes = allocation.nodes.map((n) => ({
      ...n,
      labels: labelsOfNode(n.name, cfg.labels, cfg.nodeLabels),
    }));
    for (const name of Object.keys(cfg.nodeLabels ?? {})) {
      if (!this.nodes.some((n) => n.name === name)) {
        this.warnings.push(`nodeLabels names node '${name}', which the pilot does not hold`);
      }
    }
    this.log.info('agent resources', { resource: cfg.resource ?? 'local', nodes: this.nodes });
    // probed while the queues are built (an allocation's probe may run commands)
    const setup = launchSetup(allocation, this.log);
    const jobEnd = allocation.jobEnd((m) => this.warnings.push(m));
    const { control, linked } = linkControl(cfg, this.log); // linked while the rest starts
    this.control = control;
    // the task hops inside the agent are local queues (LocalQueue: the hot path is their
    // latency), and the UpdateWorkers take the components' notifications in this process
    const queueLog = this.log.child({ component: 'queues' });
    const hops = new AgentTaskQueues(this.queues, queueLog);
    const C = COMPONENTS;
    const toScheduler = hops.into(C.agentScheduler);
    const toExecutor = hops.into(C.executor);
    const toOutput = hops.into(C.agentOutputStager);
    const toUnschedule = this.queues.local<Released>('unschedule', queueLog);
    const toClient = this.queues
      .sender(cfg.addresses.managerOutput, cfg.curve)
      // held only while other tasks wait or run here: a lone task or call goes back at once
      .spaceBy(
        BUSY_GAP_MS,
        MAX_BUSY_GAP_MS,
        () => (this.executor?.core.held() ?? 0) > 0 || (this.scheduler?.core.queued ?? 0) > 0,
      );

    const store = await this.openStore();
    for (let i = 0; i < (cfg.updateWorkers ?? 2); i++) {
      this.workers.push(UpdateWorker.start(agentWorkerOptions(cfg, i, store, this.log)));
    }
    // a restarted agent takes over what its journal says the one before it held
    const held = openAgentJournal(cfg.sandbox, cfg.restarts ?? 0, this.restart, Date.now());
    const journal = (this.journal = held?.journal);
    const prior = held?.prior;
    if (prior !== undefined) {
      this.firstSight.seed(prior.seen);
      this.lifecycle.core.setFirstStart(held!.journal.firstStart);
    }
    const notes = new AgentNotifications(this.workers, this.log, systemClock, journal);
    agentStartup.mark('store');
    this.notes = notes;
    if (cfg.addresses.files !== undefined) {
      this.files = new FileChannel({
        address: cfg.addresses.files,
        security: cfg.curve,
        session: cfg.session,
        pilot: cfg.pilot,
        sandbox: cfg.sandbox,
        log: this.log.child({ component: 'FileChannel' }),
      });
    }

    const clock = systemClock;
    const logIn = this.log.child({ component: C.agentInputStager });
    const dirWarnings: string[] = [];
    const taskRoot = taskDirRoot(cfg, this.nodes.length, process.env, (m) => dirWarnings.push(m));
    this.input = new AgentInputStagerShell(
      { notes, next: toScheduler, log: logIn, clock },
      cfg.sandbox,
      this.files,
      { output: cfg.output ?? DEFAULT_OUTPUT, taskJson: cfg.taskJson ?? false, taskRoot },
    );
    const { launch: found, warnings } = await setup;
    agentStartup.mark('resources');
    // per-node sub-agents fork the one-rank tasks of their nodes (agent.subAgents)
    const sub = subAgentsHere(cfg, found, this.configFile);
    if (!sub.on && sub.warning !== undefined) warnings.push(sub.warning);
    const launch = sub.on
      ? { ...found, subAgentNodes: new Set(this.nodes.map((n) => n.name)) }
      : found;
    this.warnings.push(...warnings, ...dirWarnings); // after the job end's, if it had one
    for (const w of dirWarnings) this.log.warn('task directories', { warning: w });
    // function tasks run in warm workers on the agent's own node, one per core by default
    const home = this.nodes.find((n) => n.name === allocation.node) ?? this.nodes[0];
    const logSched = this.log.child({ component: C.agentScheduler });
    this.scheduler = new AgentSchedulerShell(
      { notes, next: toExecutor, log: logSched, clock },
      this.nodes,
      home?.name,
      (waits) => this.uplink.waits(waits),
      cfg.backfillLimit,
      cfg.followOns ?? true, // its spawner helpers start follow-on tasks (SpawnSpec.after)
      (tasks, why) => {
        this.uplink.returns(tasks, why);
        journal?.left(tasks);
      },
      { max: cfg.launchers, needs: (t) => needsLauncher(t, launch) },
    );
    const logExec = this.log.child({ component: C.executor });
    const homeCpus = home === undefined ? undefined : launch.cpuIds?.get(home.name);
    if (prior !== undefined) this.scheduler.core.adopt(prior.executing.map((e) => e.task));
    this.executor = await ExecutorShell.start({
      ...(prior !== undefined ? { adopt: prior.executing } : {}),
      spawners: cfg.spawners ?? Math.max(1, Math.min(os.cpus().length, cfg.cores)),
      logger: logExec,
      clock,
      killGraceMs: cfg.killGraceMs ?? 3_000,
      launch: {
        ...launch,
        pilotSandbox: cfg.sandbox,
        ...(cfg.taskLimits === undefined ? {} : { taskLimits: cfg.taskLimits }),
      },
      streamDir: streamDirOf(cfg.sandbox),
      streamLimits: {
        capBytes: cfg.outputCapBytes ?? DEFAULT_OUTPUT_CAP_BYTES,
        diskBytes: cfg.outputDiskBytes ?? DEFAULT_OUTPUT_DISK_BYTES,
      },
      holdMs: HELPER_HOLD_MS,
      onUnusable: (message) =>
        this.lifecycle.core.onShutdownRequested('FAILED', `cannot start tasks: ${message}`),
      onWarning: (message) => {
        this.warnings.push(message); // a client that resumes hears it with agent_ready
        this.uplink.warning(message);
      },
      ...(sub.on
        ? {
            remote: subAgentRunner({
              ...{ cfg, srun: sub.srun, configFile: sub.configFile, nodes: this.nodes },
              ...{ host: launch.agentNode?.host, log: this.log, restarted: prior !== undefined },
              silent: (parts) => (this.silentParts = parts),
            }),
          }
        : {}),
      functions: {
        workers: cfg.functionWorkers ?? Math.max(1, home?.cores ?? 1),
        logDir: cfg.sandbox,
        cpusOf: (i) => (homeCpus?.[i] === undefined ? undefined : String(homeCpus[i])),
        ...(cfg.python !== undefined ? { python: cfg.python } : {}),
      },
      notify: (ns) => notes.send(ns),
      forward: (ts) => sendLogged(toOutput, ts, logExec, 'forward'),
      release: (tasks) =>
        sendLogged(
          toUnschedule,
          tasks.map((t) => releasedOf(t)),
          logExec,
          'release',
        ),
    });
    agentStartup.mark('helpers');
    const limitsWhy = this.executor.pool.limits.why; // said once: in the log and the pilot's info
    if (limitsWhy !== undefined) {
      this.log.warn('task limits are not enforced here', { why: limitsWhy });
      this.warnings.push(`task limits are not enforced on this node: ${limitsWhy}`);
    }
    const logOut = this.log.child({ component: C.agentOutputStager });
    this.output = new AgentOutputStagerShell(
      { notes, next: journal?.handingBack(toClient) ?? toClient, log: logOut, clock },
      cfg.sandbox,
      this.files,
    );

    const input = this.input.core;
    const scheduler = this.scheduler.core;
    const executor = this.executor.core;
    const output = this.output.core;
    hops.connect(
      {
        address: cfg.addresses.agentInput,
        security: cfg.curve,
        // the queue is this pilot's alone; a record for another session or pilot is a bug
        admit: (item) => {
          const t = item as { session?: unknown; pilot?: unknown } | null;
          if (t?.session !== cfg.session) return `names session '${String(t?.session)}'`;
          if (t.pilot !== cfg.pilot) return `names pilot '${String(t.pilot)}'`;
          return undefined;
        },
      },
      {
        [C.agentInputStager]: {
          handle: (t: TaskRecord[]) => {
            const fresh = this.firstSight.filter(t, logIn);
            input.onTasks(journal?.received(fresh) ?? fresh);
          },
          log: logIn,
        },
        [C.agentScheduler]: { handle: (t: TaskRecord[]) => scheduler.onTasks(t), log: logSched },
        [C.executor]: {
          handle: (t: TaskRecord[]) => executor.onTasks(journal?.executing(t, clock.now()) ?? t),
          log: logExec,
        },
        [C.agentOutputStager]: { handle: (t: TaskRecord[]) => output.onTasks(t), log: logOut },
      },
      (ns) => notes.send(ns),
      () => clock.now(),
    );
    toUnschedule.consume((released) => scheduler.onReleased(released));
    // what the agent before this one had received and not started goes through again
    if (prior !== undefined && prior.queued.length > 0) input.onTasks(requeued(prior.queued));

    const life = this.lifecycle.core;
    this.relocation = relocationFor(cfg, this.log, {
      connections: () => ({
        control: this.control,
        queues: this.queues,
        files: this.files,
        workers: this.workers,
      }),
      // a client that published addresses is alive: it gets its time to be heard there
      moved: () => this.lifecycle.core.onHeartbeat(),
    });
    const heard = (): void => {
      life.onHeartbeat();
      this.relocation?.core.onHeartbeat();
    };
    control.on((msg) => {
      switch (msg.type) {
        case 'cancel_tasks':
          for (const c of [input, scheduler, executor, output]) c.onCancel(msg.uids);
          return;
        case 'service_gone': // a service, maybe on another pilot, let go tasks that wait here
          return scheduler.onServiceGone(msg.uid, { attempt: msg.attempt, retry: msg.retry });
        case 'heartbeat':
          return heard();
        case 'client_resumed':
          heard();
          scheduler.onWaitsResend();
          return void this.announce().catch((e: unknown) =>
            this.log.error('agent_ready failed', errorMeta(e)),
          );
        case 'shutdown_agent':
          return life.onClientShutdown(msg);
        case 'agent_ready':
        case 'agent_heartbeat':
        case 'agent_final':
        case 'agent_waits':
        case 'agent_returns':
        case 'agent_warning':
        case 'probe':
          return; // what agents say, or the bus's own
      }
    });
    life.onStart();
    this.relocation?.core.onStart();
    try {
      await linked;
    } catch (e) {
      if (life.stopping) return; // shut down while starting: that is the news
      throw e;
    }
    agentStartup.mark('control');
    const jobEndsAt = await jobEnd;
    if (jobEndsAt !== undefined) life.setJobEnd(jobEndsAt - JOB_END_MARGIN_MS);
    life.onControlReady();
    const drainsAt = life.drainPoint();
    if (drainsAt !== undefined) this.scheduler?.core.setDrainPoint(drainsAt);
    await this.announce();
    this.log.info('agent ready', { pilot: cfg.pilot, cores: cfg.cores, gpus: cfg.gpus });
  }

  /**
   * Where the UpdateWorkers write: the session's MongoDB database, reached from here (an agent
   * that cannot reach it fails to start, naming the hosts), or the client's embedded store
   * over the pilot's own socket.
   */
  private async openStore(): Promise<{ store: MongoStore } | { storeAddress: string }> {
    const { mongodb, addresses, session } = this.cfg;
    if (mongodb !== undefined) {
      const log = this.log.child({ component: 'MongoStore' });
      const { MongoStore } = mongoStoreModule(); // loaded only by an agent that uses it
      this.mongo = await MongoStore.open(mongodb.uri, session, { db: mongodb.db, logger: log });
      return { store: this.mongo };
    }
    if (addresses.store === undefined) {
      throw new Error('the agent config names no store: addresses.store or mongodb');
    }
    return { storeAddress: addresses.store };
  }

  /** What a shutdown takes apart, as far as it was built. */
  private parts(): AgentParts {
    return {
      queues: this.queues,
      notes: this.notes,
      workers: this.workers,
      store: this.mongo,
      components: [this.input?.core, this.scheduler?.core, this.executor?.core, this.output?.core],
      pool: this.executor,
      control: this.control,
      relocation: this.relocation,
      files: this.files,
      scheduler: this.scheduler?.core,
      executor: this.executor?.core,
    };
  }

  /** Tells the client what this pilot holds (at start, and to a client that resumed). */
  private announce(): Promise<void> {
    return this.control!.publish(
      agentReady(this.cfg.pilot, this.nodes, this.warnings, {
        restart: this.restart,
        drainInMs: this.lifecycle.core.drainInMs(),
      }),
    );
  }
}
