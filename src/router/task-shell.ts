import type { Pilot } from '../client/pilot';
import type { PilotManager } from '../client/pilot-manager';
import type { Task } from '../client/task';
import type { TaskManager } from '../client/task-manager';
import { errorMeta } from '../errors';
import type { Clock, Timer } from '../lib/clock';
import type { Logger } from '../lib/logger';
import type { RouterCore, RouterPilot } from './core';
import type { CompiledModel } from './models';

// The router's replicas as service tasks of a session: started and stopped through the normal
// pipeline (the task manager's scheduler places them; `explain` says why one waits), and the
// session's pilots as the core's places. Readiness and ends come from waitReady and waitTasks:
// no state callback, which would make every task of the session pay for the router.

/** Every replica's uid starts so (then the router's own id: `router.<id>.<model>.<n>`). */
export const REPLICA_PREFIX = 'router.';

/** How often the pilots are looked at again (a drain point is known once its agent reported). */
const PILOT_LOOK_MS = 5_000;

export class ReplicaTasks {
  private core: RouterCore | undefined;
  private readonly known = new Map<string, string>();
  /** Replicas being submitted: true once asked to stop meanwhile. */
  private readonly submitting = new Map<string, boolean>();
  private timer: Timer | undefined;
  private unsubscribe: (() => void) | undefined;
  private closed = false;

  constructor(
    private readonly tmgr: TaskManager,
    private readonly pmgr: PilotManager,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /**
   * Follows the session's pilots into the core from now on. The replicas an earlier router of
   * the session left running (its process was killed; this one resumed the session) are
   * stopped: nothing routes to them any more.
   */
  attach(core: RouterCore, ownPrefix: string): void {
    this.core = core;
    const orphans = this.tmgr
      .list()
      .filter((t) => t.uid.startsWith(REPLICA_PREFIX) && !t.uid.startsWith(ownPrefix) && !t.final)
      .map((t) => t.uid);
    if (orphans.length > 0) {
      this.log.info('router: stopping the replicas of an earlier router', { replicas: orphans });
      for (const uid of orphans) this.cancel(uid);
    }
    this.unsubscribe = this.pmgr.onState(() => this.lookAtPilots());
    this.lookAtPilots();
  }

  close(): void {
    this.closed = true;
    this.timer?.cancel();
    this.unsubscribe?.();
  }

  startReplica(
    replica: string,
    model: CompiledModel,
    pilot: string,
    prefer: readonly string[],
  ): void {
    void this.start(replica, model, pilot, prefer);
  }

  stopReplica(replica: string): void {
    // asked to stop while its submit is under way: canceled once it is a task
    if (this.submitting.has(replica)) {
      this.submitting.set(replica, true);
      return;
    }
    this.cancel(replica);
  }

  private cancel(replica: string): void {
    this.tmgr.cancelTasks([replica]).catch((e: unknown) => {
      // not a task of this manager: it was never submitted, and its end was reported then
      this.log.warn('router: cancel of a replica failed', { replica, ...errorMeta(e) });
    });
  }

  private async start(
    replica: string,
    model: CompiledModel,
    pilot: string,
    prefer: readonly string[],
  ): Promise<void> {
    const core = this.core!;
    this.submitting.set(replica, false);
    const description = { ...model.service, uid: replica, pilot, name: `router ${model.name}` };
    // where the model was ready before first (its files are likely cached there), then its own
    const own = model.service.placement?.prefer ?? [];
    if (prefer.length > 0) {
      const names = [...new Set([...prefer, ...own])].slice(0, 64);
      description.placement = { ...model.service.placement, prefer: names };
    }
    try {
      await this.tmgr.submitTasks([description]);
    } catch (e) {
      this.submitting.delete(replica);
      this.log.error('router: a replica could not be submitted', { replica, ...errorMeta(e) });
      core.onReplicaEnded(replica, `not submitted: ${(e as Error).message}`);
      return;
    }
    const stop = this.submitting.get(replica) === true;
    this.submitting.delete(replica);
    if (stop) this.cancel(replica);
    this.tmgr.waitReady(replica).then(
      (endpoint) => {
        if (this.closed) return;
        core.onReplicaReady(replica, `http://${endpoint}`, this.tmgr.get(replica)?.node);
      },
      () => undefined, // it ended before it was ready: waitTasks below says how
    );
    this.tmgr.waitTasks({ uids: [replica] }).then(
      ([task]) => {
        if (!this.closed) core.onReplicaEnded(replica, endText(task!));
      },
      (e: unknown) => {
        if (!this.closed) core.onReplicaEnded(replica, (e as Error).message);
      },
    );
  }

  /** Each live pilot as the core knows it, once it changed; ended ones are gone. */
  private lookAtPilots(): void {
    if (this.closed) return;
    const core = this.core!;
    const live = new Set<string>();
    for (const p of this.pmgr.list()) {
      if (p.state !== 'PMGR_ACTIVE') continue;
      live.add(p.uid);
      const seen = placeOf(p);
      const key = JSON.stringify(seen);
      if (this.known.get(p.uid) === key) continue;
      this.tmgr.addPilots([p]);
      this.known.set(p.uid, key);
      core.onPilot(seen);
    }
    for (const uid of [...this.known.keys()]) {
      if (live.has(uid)) continue;
      this.known.delete(uid);
      core.onPilotGone(uid);
    }
    this.timer?.cancel();
    this.timer = this.clock.setTimeout(() => this.lookAtPilots(), PILOT_LOOK_MS);
  }
}

function placeOf(p: Pilot): RouterPilot {
  const labelled = p.labelledNodes();
  return {
    uid: p.uid,
    cores: p.cores,
    gpus: p.gpus,
    ...(p.drainsAt !== undefined ? { drainAtMs: p.drainsAt } : {}),
    ...(labelled !== undefined
      ? { nodes: p.nodes.map((n, i) => ({ ...n, labels: labelled[i]!.labels })) }
      : {}),
  };
}

/** A replica's end in a line: its state and reason (`FAILED E_SERVICE_EXITED: exit code 1`). */
function endText(t: Task): string {
  return t.reason !== undefined ? `${t.state} ${t.reason.code}: ${t.reason.message}` : t.state;
}
