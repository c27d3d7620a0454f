import type { Clock, Timer } from '../../lib/clock';
import { reason } from '../../components/shared/reasons';
import type {
  AgentFinal,
  AgentLifecycleEffects,
  Shutdown,
  ShutdownStep,
  SignalBeforeEnd,
} from './effects';

/**
 * The order of a shutdown: nothing new comes in, every held task gets its final state, the
 * processes die, their notifications reach the UpdateWorkers before these close, and the client
 * hears of the end last.
 */
export const SHUTDOWN_ORDER: readonly ShutdownStep[] = [
  'stopReceiving',
  'finalizeTasks',
  'closeSpawners',
  'flushNotifications',
  'closeSenders',
  'awaitUpdates',
  'closeWorkers',
  'closeQueues',
  'publishFinal',
  'closeControl',
];

/**
 * A watchdog that fires this much later than it was due ran in a process that was stopped
 * (SIGSTOP) or starved: the heartbeats that came meanwhile wait unread in its socket. It looks
 * again after STALL_RECHECK_MS, once they have been read, before judging the client.
 */
export const STALL_MS = 1_000;
export const STALL_RECHECK_MS = 1_000;

/** How long the agent waits for a silent client unless its config says (heartbeatTimeoutMs). */
export const CLIENT_TIMEOUT_MS = 30_000;

/** How often an agent tells its client it is alive (the client's own heartbeat period). */
export const AGENT_HEARTBEAT_MS = 1_000;

/** How long a shutdown waits for the UpdateWorkers to pull the last notifications. */
export const UPDATES_WAIT_MS = 2_000;
/** The same with the store gone: nobody would read them. Also the workers' ack wait then. */
export const UPDATES_WAIT_STORE_GONE_MS = 200;

export interface AgentLifecycleOptions {
  pilot: string;
  /** The client's silence after which the agent gives up on it (<= 0: never). */
  heartbeatTimeoutMs: number;
  /**
   * How long the agent works on for a silent client when longer than heartbeatTimeoutMs (the
   * pilot's agent.clientGraceS): its tasks run, what it cannot deliver waits for a resume.
   */
  clientGraceMs?: number;
  /**
   * The pilot's runtime, counted from when the control bus is ready, or from `firstStart` for
   * an agent started again in the allocation.
   */
  runtimeMin: number;
  /** The parts of the agent silent now (sub-agents), each since when: said with each beat. */
  silentParts?(): { part: string; since: number }[];
  signalBeforeEnd?: SignalBeforeEnd | undefined;
  /**
   * Whether the state store lives in the client (the embedded one): a lost client then takes
   * it along, and no ack is waited for. A MongoDB store outlives the client: what the workers
   * hold is still written.
   */
  storeInClient?: boolean;
  /** Where the shell writes why the agent ends, for a client that comes later (agent.end.json). */
  endFile?: string;
}

/**
 * Decides when an agent ends and in which order it takes itself apart: the client heartbeat
 * watchdog, the runtime limit, and shutdown requests (client, signal, failure to start). One
 * shutdown only; the first cause wins.
 */
export class AgentLifecycleCore {
  private lastHeartbeat: number;
  private watchdog: Timer | undefined;
  private runtime: Timer | undefined;
  private firstStart: number | undefined;
  private drainTimer: Timer | undefined;
  /** The pilot's end and its drain point (clock ms), once the control bus is ready. */
  private endsAt: number | undefined;
  private drainsAt: number | undefined;
  private jobEndsAt: number | undefined;
  private heartbeat: Timer | undefined;
  private shutdown: Shutdown | undefined;
  /** Index in SHUTDOWN_ORDER of the step under way. */
  private at = -1;
  private bound: Timer | undefined;

  constructor(
    private readonly effects: AgentLifecycleEffects,
    private readonly clock: Clock,
    private readonly opts: AgentLifecycleOptions,
  ) {
    this.lastHeartbeat = clock.now();
  }

  get stopping(): boolean {
    return this.shutdown !== undefined;
  }

  /**
   * The agent starts: the client's silence counts from now, so a client that dies before the
   * control bus is ready (a busy machine can take seconds to join) does not leave us waiting.
   */
  onStart(): void {
    if (this.shutdown !== undefined || this.opts.heartbeatTimeoutMs <= 0) return;
    this.lastHeartbeat = this.clock.now();
    this.watchClient(this.silenceLimitMs());
  }

  /** How long the client may be silent: its timeout, or the pilot's longer grace. */
  private silenceLimitMs(): number {
    return Math.max(this.opts.heartbeatTimeoutMs, this.opts.clientGraceMs ?? 0);
  }

  /** A heartbeat (or any sign of life) from the client. */
  onHeartbeat(): void {
    this.lastHeartbeat = this.clock.now();
  }

  /**
   * The control bus is ready: the pilot's runtime starts, and its heartbeats to the client. It
   * ends at runtimeMin, or earlier at the end of its batch job; it drains signalBeforeEnd
   * seconds before that (or at its end).
   */
  onControlReady(): void {
    if (this.shutdown !== undefined || this.runtime !== undefined) return;
    this.beat();
    const { runtimeMin, signalBeforeEnd } = this.opts;
    const jobEndsAt = this.jobEndsAt;
    const now = this.clock.now();
    const byRuntime = (this.firstStart ?? now) + runtimeMin * 60_000;
    const byJob = jobEndsAt !== undefined && jobEndsAt < byRuntime;
    const endsAt = (this.endsAt = byJob ? Math.max(now, jobEndsAt) : byRuntime);
    const why = byJob
      ? `the batch job's end is near (${new Date(jobEndsAt).toISOString()})`
      : `runtime limit of ${runtimeMin} min reached`;
    this.runtime = this.clock.setTimeout(() => this.timeUp(why), endsAt - now);
    const lead = (signalBeforeEnd?.seconds ?? 0) * 1000;
    this.drainsAt = Math.max(now, endsAt - lead);
    if (lead > 0) {
      this.drainTimer = this.clock.setTimeout(
        () => this.effects.drain(signalBeforeEnd?.signal),
        this.drainsAt - now,
      );
    }
  }

  /** This agent was started again after one that started at `at` (epoch ms): its runtime counts from there. */
  setFirstStart(at: number): void {
    this.firstStart = at;
  }

  /** The batch job holding the pilot ends at `at` (epoch ms, less the shutdown's margin). */
  setJobEnd(at: number): void {
    this.jobEndsAt = at;
  }

  /** When the pilot drains (clock ms; undefined before the control bus is ready). */
  drainPoint(): number | undefined {
    return this.drainsAt;
  }

  /** Milliseconds until the pilot drains (undefined before the control bus is ready). */
  drainInMs(): number | undefined {
    return this.drainsAt === undefined ? undefined : Math.max(0, this.drainsAt - this.clock.now());
  }

  private timeUp(why: string): void {
    if (this.shutdown !== undefined) return;
    this.effects.drain(undefined);
    this.onShutdownRequested('DONE', `${why}; ${this.effects.endSummary()}`, false, true);
  }

  /** The client's shutdown_agent: only the one naming this pilot counts. */
  onClientShutdown(msg: { pilot: string; final: AgentFinal; message?: string }): void {
    if (msg.pilot !== this.opts.pilot) return;
    this.onShutdownRequested(
      msg.final,
      msg.message ?? `pilot ${msg.final.toLowerCase()} by the client`,
    );
  }

  onStartFailed(message: string): void {
    this.onShutdownRequested('FAILED', `agent failed to start: ${message}`);
  }

  /** Starts the shutdown, unless one is under way already. */
  onShutdownRequested(final: AgentFinal, message: string, storeGone = false, timeUp = false): void {
    if (this.shutdown !== undefined) return;
    this.shutdown = { final, message, storeGone, timeUp };
    this.watchdog?.cancel();
    this.runtime?.cancel();
    this.drainTimer?.cancel();
    this.heartbeat?.cancel();
    this.effects.shuttingDown(this.shutdown);
    this.next();
  }

  /** A step finished; a late report (a bounded wait already over) is ignored. */
  onStepDone(step: ShutdownStep): void {
    if (this.shutdown === undefined || SHUTDOWN_ORDER[this.at] !== step) return;
    this.bound?.cancel();
    this.bound = undefined;
    this.next();
  }

  private beat(): void {
    this.effects.publishHeartbeat();
    this.heartbeat = this.clock.setTimeout(() => this.beat(), AGENT_HEARTBEAT_MS);
  }

  private watchClient(ms: number, recheck = false): void {
    const due = this.clock.now() + ms;
    this.watchdog = this.clock.setTimeout(() => {
      const timeout = this.silenceLimitMs();
      const now = this.clock.now();
      const silent = now - this.lastHeartbeat;
      if (silent < timeout) return this.watchClient(timeout - silent);
      // judged from heartbeats read, not from our own stalled timer
      if (!recheck && now - due > STALL_MS) return this.watchClient(STALL_RECHECK_MS, true);
      const grace =
        timeout > this.opts.heartbeatTimeoutMs ? " (the pilot's agent.clientGraceS)" : '';
      this.onShutdownRequested(
        'FAILED',
        `lost the client: no heartbeat for ${Math.round(silent / 1000)} s${grace}`,
        this.opts.storeInClient !== false,
      );
    }, ms);
  }

  private next(): void {
    const s = this.shutdown!;
    const step = SHUTDOWN_ORDER[++this.at];
    if (step === undefined) return this.effects.finished(s.final, s.message);
    this.run(step, s);
  }

  private run(step: ShutdownStep, s: Shutdown): void {
    const e = this.effects;
    switch (step) {
      case 'stopReceiving':
        return e.stopReceiving();
      case 'finalizeTasks':
        return e.finalizeTasks(
          s.final === 'CANCELED' ? 'CANCELED' : 'FAILED',
          reason(
            s.final === 'CANCELED' ? 'E_CANCELED' : 'E_PILOT_ENDED',
            `pilot ${this.opts.pilot} ended before the task finished: ${s.message}`,
            'Agent',
          ),
          s.timeUp === true,
        );
      case 'closeSpawners':
        return e.closeSpawners();
      case 'flushNotifications':
        return e.flushNotifications();
      case 'closeSenders':
        return e.closeSenders();
      case 'awaitUpdates': {
        const ms = s.storeGone ? UPDATES_WAIT_STORE_GONE_MS : UPDATES_WAIT_MS;
        // armed first: the effect may report completion at once
        this.bound = this.clock.setTimeout(() => this.onStepDone('awaitUpdates'), ms);
        return e.awaitUpdates();
      }
      case 'closeWorkers':
        return e.closeWorkers(s.storeGone ? UPDATES_WAIT_STORE_GONE_MS : undefined);
      case 'closeQueues':
        return e.closeQueues();
      case 'publishFinal':
        return e.publishFinal(s.final, s.message);
      case 'closeControl':
        return e.closeControl();
    }
  }
}
