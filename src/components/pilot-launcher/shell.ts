import type { AgentConfig, PilotDescription, PilotLiveness, Reason } from '../../generated';
import { InternalError, errorMeta } from '../../errors';
import type { Clock } from '../../lib/clock';
import type { Logger } from '../../lib/logger';
import type { Notification } from '../../states/notification';
import { PilotLauncherCore, type JobEnd } from './core';
import type { PilotLauncherEffects } from './effects';
import type {
  AgentExit,
  AgentTrace,
  Capacity,
  LaunchEvents,
  PilotLauncher,
  Resource,
} from './launcher';
import type { PilotRecord } from './pilot-record';
import { PILOT_LAUNCHERS, type LauncherRegistry } from './registry';
import type { FinalPilotState } from '../../states/pilot-model';

type Final = FinalPilotState;

/** What the shell needs of the client, and nothing more. */
export interface PilotLauncherShellDeps {
  /** Records how to find a launched agent again, before the core hears of it (resume). */
  journal: { append(entry: { t: 'agent'; pilot: string; pid?: number; jobId?: string }): void };
  /** The session's control pubsub, which the agents hear. */
  control: {
    publish(msg: {
      type: 'shutdown_agent';
      pilot: string;
      final: Final;
      message: string;
    }): Promise<void>;
  };
  notify(notifications: Notification[]): void;
  /** The pilot reached a final state: no task may go to it any more. */
  ended(uid: string, state: Final, reason?: Reason): void;
  /** An active pilot's liveness changed (its agent silent or heard again, its silent parts). */
  liveness?(uid: string, liveness: PilotLiveness): void;
  /** The agent config every resource shares (the session's addresses, the pilot's limits). */
  agentConfig(pilot: PilotRecord): AgentConfig;
  clock: Clock;
  log: Logger;
  /** How long an agent may take to shut down before it is killed. */
  shutdownGraceMs: number;
  /** Batch pilots: how often the job is polled when the description says nothing. */
  pollMs?: number;
  /** The launchers to use (default: registry.ts). */
  launchers?: LauncherRegistry;
}

/**
 * The PilotLauncher's shell: holds the pure core and one launcher per resource (registry.ts),
 * performs the core's effects with the launcher of each pilot's resource, and forwards what
 * the launchers report into the core.
 */
export class PilotLauncherShell implements PilotLauncherEffects, LaunchEvents {
  readonly core: PilotLauncherCore;
  private readonly launchers = new Map<Resource, PilotLauncher>();
  /** The resource of each pilot launched or adopted and not yet ended. */
  private readonly resourceOf = new Map<string, Resource>();

  constructor(private readonly deps: PilotLauncherShellDeps) {
    this.core = new PilotLauncherCore(this, deps.clock, { shutdownGraceMs: deps.shutdownGraceMs });
    const ctx = {
      events: this,
      log: deps.log,
      ...(deps.pollMs !== undefined ? { pollMs: deps.pollMs } : {}),
    };
    for (const [resource, make] of Object.entries(deps.launchers ?? PILOT_LAUNCHERS)) {
      this.launchers.set(resource as Resource, make(ctx));
    }
  }

  /** What each pilot holds before its agent reports in, in the order given. */
  async capacities(descriptions: PilotDescription[]): Promise<Capacity[]> {
    const out: Capacity[] = new Array<Capacity>(descriptions.length);
    const byResource = new Map<Resource, number[]>();
    descriptions.forEach((d, i) => {
      const at = byResource.get(d.resource) ?? [];
      at.push(i);
      byResource.set(d.resource, at);
    });
    for (const [resource, at] of byResource) {
      const sized = await this.launcher(resource).capacities(at.map((i) => descriptions[i]!));
      at.forEach((i, k) => (out[i] = sized[k]!));
    }
    return out;
  }

  /**
   * Takes back a pilot a previous client of the session launched (`trace`: what the journal
   * says of its agent); `startedAt`: when it became ACTIVE, if it did.
   */
  adopt(pilot: PilotRecord, trace: { pid?: number; jobId?: string }, startedAt?: number): void {
    this.resourceOf.set(pilot.uid, pilot.description.resource);
    this.core.onAdopt(pilot, {
      launched: trace.pid !== undefined || trace.jobId !== undefined,
      // a batch job not seen running: it may still wait in the queue
      queued: trace.jobId !== undefined && pilot.state !== 'PMGR_ACTIVE',
      ...(startedAt !== undefined ? { startedAt } : {}),
    });
    this.launcher(pilot.description.resource).adopt(pilot, trace);
  }

  /** Stops every launcher following its agents (the session is closing). */
  close(): void {
    for (const l of this.launchers.values()) l.close();
  }

  // PilotLauncherEffects: what the core asks

  launch(pilot: PilotRecord): void {
    this.resourceOf.set(pilot.uid, pilot.description.resource);
    const l = this.launcher(pilot.description.resource);
    l.launch(pilot, l.agentConfig(pilot, this.deps.agentConfig(pilot)));
  }

  shutdownAgent(uid: string, final: Final, message: string): void {
    void this.deps.control
      .publish({ type: 'shutdown_agent', pilot: uid, final, message })
      .catch((e: unknown) => this.deps.log.error('shutdown publish failed', errorMeta(e)));
  }

  kill(uid: string): void {
    const resource = this.resourceOf.get(uid);
    if (resource !== undefined) this.launcher(resource).kill(uid);
  }

  notify(notifications: Notification[]): void {
    this.deps.notify(notifications);
  }

  liveness(uid: string, liveness: PilotLiveness): void {
    if (liveness.state === 'unknown') {
      this.deps.log.warn('agent silent', { pilot: uid, since: liveness.since });
    }
    this.deps.liveness?.(uid, liveness);
  }

  ended(uid: string, state: Final, reason?: Reason): void {
    this.resourceOf.delete(uid);
    this.deps.ended(uid, state, reason);
  }

  // LaunchEvents: what the launchers report

  launched(uid: string, trace: AgentTrace): void {
    this.deps.journal.append({ t: 'agent', pilot: uid, ...trace });
    this.core.onLaunched(uid, { queued: 'jobId' in trace });
  }

  launchFailed(uid: string, error: { message: string; code?: Reason['code'] }): void {
    this.core.onLaunchFailed(uid, error);
  }

  jobStarted(uid: string): void {
    this.core.onJobStarted(uid);
  }

  jobEnded(uid: string, end: JobEnd): void {
    this.core.onJobEnded(uid, end);
  }

  agentExited(uid: string, exit: AgentExit): void {
    this.core.onAgentExited(uid, exit);
  }

  private launcher(resource: Resource): PilotLauncher {
    const l = this.launchers.get(resource);
    // the registry's mapped type holds every resource of the schema
    if (l === undefined) throw new InternalError(`pilot-launcher-shell: no launcher '${resource}'`);
    return l;
  }
}
