import * as path from 'node:path';
import type { AgentConfig, PilotDescription } from '../generated';
import { ValidationError, errorMeta } from '../errors';
import type { Logger } from '../lib/logger';
import { parsePilotDescription } from '../lib/validate';
import {
  FINAL_PILOT_STATES,
  PILOT_MODEL,
  PILOT_STATES,
  type PilotState,
} from '../states/pilot-model';
import type { Notification } from '../states/notification';
import { StateTracker } from '../states/state-tracker';
import { COMPONENTS } from '../states/task-model';
import type { PilotRecord } from '../components/pilot-launcher/pilot-record';
import { PilotLauncherShell } from '../components/pilot-launcher/shell';
import { Listeners } from './calls/listeners';
import { managersOf } from './control/managers';
import { Pilot } from './pilot';
import type { DeliveryCursor } from './resume/delivered';
import type { ClientRuntime } from './runtime/runtime';
import type { PilotLink } from './pilots/links';
import { runtimeOf } from './runtime/runtime';
import type { Session } from './session';
import type { StateInfo } from './task';
import { Waiters } from './calls/waiters';
import { validateAll } from './calls/validate-all';
import { checkSelection } from './calls/selection';
import { ADDRESS_FILE } from './resume/addresses';

/** Without agent.clientGraceS: how long an agent goes on for a silent client (15 min: a reboot). */
const DEFAULT_CLIENT_GRACE_S = 900;

export interface PilotManagerOptions {
  /** How long a pilot's agent may take to shut down before it is killed (default 10 s). */
  shutdownGraceMs?: number;
  /** Slurm pilots: how often the job is polled when the description says nothing (1000 ms). */
  slurmPollMs?: number;
  /**
   * A resumed session: a pilot taken back whose agent is found gone (it died, or its grace
   * for a silent client ended) is replaced by a new pilot of the same description, handed to
   * this callback (`pilotfish run` adds it to its TaskManager) before the old one's tasks are
   * taken over, so the tasks that never ran start on it. Without it they end E_NO_PILOT.
   */
  replaceLost?: (lost: Pilot, replacement: Pilot) => void;
}

/** Submits pilots, follows their states, cancels them; pilots end when the session closes. */
export class PilotManager {
  /** The session's runtime: what this facade drives. */
  private readonly rt: ClientRuntime;
  private readonly pilots = new Map<string, Pilot>();
  private readonly records = new Map<string, PilotRecord>();
  private readonly links = new Map<string, PilotLink>();
  private readonly tracker = new StateTracker<PilotState>(PILOT_MODEL);
  private readonly callbacks: Listeners<[Pilot, PilotState, StateInfo]>;
  private readonly waiters = new Waiters<PilotState>();
  /** The PilotLauncher component: its core and a launcher per resource. */
  private readonly launcher: PilotLauncherShell;
  private readonly log: Logger;
  /** This manager's name in the session's journal. */
  private readonly name: string;
  /** Skips the callbacks a previous client of the session delivered. */
  private readonly delivery: DeliveryCursor;

  constructor(session: Session, options: PilotManagerOptions = {}) {
    const rt = (this.rt = runtimeOf(session));
    this.log = rt.log.child({ component: COMPONENTS.pilotManager });
    this.callbacks = new Listeners(this.log);
    ({ name: this.name, delivery: this.delivery } = rt.registerManager('pmgr'));
    managersOf(rt).pilots.add(this);
    this.launcher = new PilotLauncherShell({
      journal: rt.journal,
      control: rt.control,
      notify: (ns) => rt.notify(ns),
      ended: (uid, state, reason) => {
        rt.setPilotCapacity(uid, undefined);
        const replaced = this.replace(uid, state, options.replaceLost);
        if (replaced === undefined) return rt.emitPilotEnded(uid, state, reason);
        // the old pilot's tasks are taken over once the new one can have them
        void replaced.finally(() => rt.emitPilotEnded(uid, state, reason));
      },
      liveness: (uid, liveness) => this.pilots.get(uid)?.setLiveness(liveness),
      agentConfig: (rec) => this.agentConfig(rec),
      clock: rt.clock,
      log: rt.log.child({ component: COMPONENTS.pilotLauncher }),
      shutdownGraceMs: options.shutdownGraceMs ?? 10_000,
      ...(options.slurmPollMs !== undefined ? { pollMs: options.slurmPollMs } : {}),
    });
    rt.control.on((msg) => {
      if (msg.type === 'agent_ready') {
        this.unreported.delete(msg.pilot);
        this.launcher.core.onAgentReady(msg.pilot);
        // said once per agent start: a pilot declaring more cores or GPUs than its machine has
        for (const warning of msg.warnings ?? []) {
          this.log.warn('pilot resources', { pilot: msg.pilot, warning });
        }
        const pilot = this.pilots.get(msg.pilot);
        pilot?.reportedIn(msg, rt.clock.now());
        if (pilot !== undefined && !pilot.final) {
          // a batch pilot's real size is known only now: tasks are placed against it
          rt.journal.append({ t: 'agent', pilot: pilot.uid, nodes: msg.nodes });
          this.sized(pilot, msg.nodes);
          rt.pipeline.pilotActive({
            uid: pilot.uid,
            cores: pilot.cores,
            gpus: pilot.gpus,
            nodes: pilot.labelledNodes(),
            drainInMs: msg.drainInMs,
          });
          if (msg.restarts !== undefined) rt.pipeline.agentRestarted(pilot.uid);
        }
      } else if (msg.type === 'agent_warning') {
        // found while it runs (function workers that cannot start): said once, kept with the pilot
        this.log.warn('pilot warning', { pilot: msg.pilot, warning: msg.warning });
        const pilot = this.pilots.get(msg.pilot);
        if (pilot !== undefined && !pilot.warnings.includes(msg.warning)) {
          pilot.warnings.push(msg.warning);
        }
      } else if (msg.type === 'agent_heartbeat') {
        this.launcher.core.onAgentHeartbeat(msg.pilot, msg.silent ?? []);
        // an adopted agent that beats without reporting in missed client_resumed (published
        // while its subscription was still reconnecting): asked again
        if (this.unreported.has(msg.pilot)) this.askToReport();
      } else if (msg.type === 'agent_final') {
        this.launcher.core.onAgentFinal(msg.pilot, msg.final, msg.message);
      }
    });
    rt.onNotifications((ns) => this.ingest(ns));
    rt.atClose(() => this.shutdownAll());
    if (rt.replayPending) this.adopt();
  }

  private sized(pilot: Pilot, nodes: { name: string; cores: number; gpus: number }[]): void {
    pilot.nodes = nodes;
    pilot.cores = nodes.reduce((n, x) => n + x.cores, 0);
    pilot.gpus = nodes.reduce((n, x) => n + x.gpus, 0);
    this.rt.setPilotCapacity(pilot.uid, { cores: pilot.cores, gpus: pilot.gpus });
  }

  /**
   * A resumed session: takes back this manager's pilots from the journal, binds their task
   * queues where their agents connect, and once the replay has rebuilt their states follows the
   * live ones again (a local agent by its pid, a batch job by its id); their agents report in.
   */
  private adopt(): void {
    const traces = new Map<string, { pid?: number; jobId?: string }>();
    const mine: Pilot[] = [];
    for (const e of this.rt.resumed) {
      if (e.t === 'pilots' && e.mgr === this.name) {
        for (const p of e.pilots) {
          const pilot = new Pilot(p.uid, p.description, p.cores, p.gpus, p.sandbox);
          this.pilots.set(p.uid, pilot);
          mine.push(pilot);
          this.links.set(p.uid, p.link);
          this.rt.setPilotCapacity(p.uid, { cores: p.cores, gpus: p.gpus });
          this.records.set(p.uid, {
            uid: p.uid,
            state: 'NEW',
            session: this.rt.uid,
            description: p.description,
            cores: p.cores,
            gpus: p.gpus,
            sandbox: p.sandbox,
          });
        }
      } else if (e.t === 'agent' && this.pilots.has(e.pilot)) {
        const t = traces.get(e.pilot) ?? {};
        if (e.pid !== undefined) t.pid = e.pid;
        if (e.jobId !== undefined) t.jobId = e.jobId;
        traces.set(e.pilot, t);
        if (e.nodes !== undefined) this.sized(this.pilots.get(e.pilot)!, e.nodes);
      }
    }
    this.rt.onReplay(
      0,
      async () => {
        for (const p of mine) {
          await this.rt.openPilot(p.uid, this.links.get(p.uid));
        }
      },
      () => {
        for (const pilot of mine) this.follow(pilot, traces.get(pilot.uid) ?? {});
        for (const p of mine) if (!p.final) this.unreported.add(p.uid);
        if (this.unreported.size > 0) this.askToReport();
      },
    );
  }

  /** Pilots taken back from a previous client, alive when taken: replaced if found gone. */
  private readonly adoptedLive = new Set<string>();

  /**
   * A new pilot for an adopted one that failed (its agent gone), given to `hook`; undefined
   * when there is none to make. A failure to submit it is logged: the old pilot's tasks then
   * end as without one.
   */
  private replace(
    uid: string,
    state: PilotState,
    hook: PilotManagerOptions['replaceLost'],
  ): Promise<void> | undefined {
    const lost = this.pilots.get(uid);
    if (hook === undefined || state !== 'FAILED' || !this.adoptedLive.delete(uid)) return;
    if (lost === undefined) return;
    const { uid: _uid, ...description } = lost.description;
    // a sandbox of the user's own is not shared with the agent that left it
    if (description.sandbox !== undefined) description.sandbox = `${description.sandbox}.${uid}`;
    return this.submitPilots([description]).then(
      ([replacement]) => {
        this.log.info('pilot replaced', { lost: uid, replacement: replacement!.uid });
        hook(lost, replacement!);
      },
      (e: unknown) => this.log.error('pilot not replaced', { pilot: uid, ...errorMeta(e) }),
    );
  }

  /** A generated uid no pilot of the session's journal has (a resumed session's new pilots). */
  private freshUid(): string {
    const taken = this.rt.resumed.flatMap((e) =>
      e.t === 'pilots' ? e.pilots.map((p) => p.uid) : [],
    );
    let uid: string;
    do uid = this.rt.nextPilotUid();
    while (taken.includes(uid));
    return uid;
  }

  /** Adopted pilots whose agents have not reported in to this client yet. */
  private readonly unreported = new Set<string>();

  private askToReport(): void {
    void this.rt.control
      .publish({ type: 'client_resumed' })
      .catch((e: unknown) => this.log.error('client_resumed publish failed', errorMeta(e)));
  }

  private follow(pilot: Pilot, trace: { pid?: number; jobId?: string }): void {
    const rec = this.records.get(pilot.uid)!;
    rec.state = pilot.state;
    if (pilot.final) {
      this.rt.setPilotCapacity(pilot.uid, undefined);
      this.rt.pipeline.pilotGone(pilot.uid, pilot.state);
      return;
    }
    const startedAt = pilot.history.find((h) => h.state === 'PMGR_ACTIVE')?.ts;
    this.adoptedLive.add(pilot.uid);
    this.launcher.adopt(rec, trace, startedAt);
  }

  /** Validates every description first (nothing is submitted if one is invalid). */
  async submitPilots(descriptions: PilotDescription[]): Promise<Pilot[]> {
    this.rt.assertOpen();
    const descs = validateAll(descriptions, parsePilotDescription, 'PilotDescription');
    const sizes = await this.launcher.capacities(descs);
    const out: Pilot[] = [];
    const records: PilotRecord[] = [];
    const notes: Notification[] = [];
    for (const [i, d] of descs.entries()) {
      const uid = d.uid ?? this.freshUid();
      if (this.pilots.has(uid)) {
        throw new ValidationError(`invalid PilotDescription: uid '${uid}' is already used`, [
          { path: '/uid', message: `must be unique ('${uid}' is already used)` },
        ]);
      }
      const { cores, gpus } = sizes[i]!;
      const sandbox = d.sandbox ?? path.join(this.rt.dir, uid);
      const pilot = new Pilot(uid, d, cores, gpus, sandbox);
      this.pilots.set(uid, pilot);
      const rec: PilotRecord = {
        uid,
        state: 'NEW',
        session: this.rt.uid,
        description: d,
        cores,
        gpus: pilot.gpus,
        sandbox,
      };
      this.records.set(uid, rec);
      records.push(rec);
      const ts = this.rt.clock.now();
      const base = {
        kind: 'pilot' as const,
        uid,
        attempt: 1,
        ts,
        component: COMPONENTS.pilotManager,
      };
      notes.push({ ...base, state: 'NEW' }, { ...base, state: 'PMGR_LAUNCHING_PENDING' });
      rec.state = 'PMGR_LAUNCHING_PENDING';
      out.push(pilot);
    }
    // the queue exists before any task can be routed to the pilot
    for (const rec of records) {
      this.links.set(rec.uid, await this.rt.openPilot(rec.uid));
      this.rt.setPilotCapacity(rec.uid, { cores: rec.cores, gpus: rec.gpus });
    }
    this.rt.journal.append({
      t: 'pilots',
      mgr: this.name,
      pilots: records.map((r) => ({
        uid: r.uid,
        description: r.description,
        cores: r.cores,
        gpus: r.gpus,
        sandbox: r.sandbox,
        link: this.links.get(r.uid)!,
      })),
    });
    this.rt.notify(notes);
    this.launcher.core.onSubmit(records);
    return out;
  }

  onState(fn: (pilot: Pilot, state: PilotState, info: StateInfo) => void): () => void {
    return this.callbacks.add(fn);
  }

  get(uid: string): Pilot | undefined {
    return this.pilots.get(uid);
  }

  list(): Pilot[] {
    return [...this.pilots.values()];
  }

  /** Waits until the pilots (default: all) reach one of `states` (default: a final state). */
  async waitPilots(
    opts: { uids?: string[]; states?: readonly PilotState[]; timeoutMs?: number } = {},
  ): Promise<Pilot[]> {
    checkSelection(
      'waitPilots',
      opts,
      (u) => this.pilots.has(u),
      'a pilot of this manager',
      PILOT_STATES,
    );
    const uids = opts.uids ?? [...this.pilots.keys()];
    const states = new Set(opts.states ?? FINAL_PILOT_STATES);
    await this.rt.replay();
    await this.waiters.wait(
      uids,
      states,
      (u) => this.pilots.get(u)?.state,
      opts.timeoutMs,
      'waitPilots',
    );
    return uids.map((u) => this.pilots.get(u)!);
  }

  /** Asks the pilots' agents to shut down; their tasks end CANCELED. An unknown uid throws. */
  cancelPilots(uids?: string[]): void {
    checkSelection('cancelPilots', { uids }, (u) => this.pilots.has(u), 'a pilot of this manager');
    this.launcher.core.onCancel(uids ?? [...this.pilots.keys()]);
  }

  /** The agent config every resource shares; the pilot's launcher adds what its resource needs. */
  private agentConfig(rec: PilotRecord): AgentConfig {
    const agent = rec.description.agent ?? {};
    return {
      session: this.rt.uid,
      pilot: rec.uid,
      sandbox: rec.sandbox,
      sessionDir: this.rt.dir,
      cores: rec.cores,
      gpus: rec.gpus,
      runtimeMin: rec.description.runtimeMin ?? 60,
      ...(rec.description.signalBeforeEnd !== undefined
        ? { signalBeforeEnd: rec.description.signalBeforeEnd }
        : {}),
      ...(rec.description.memMb !== undefined ? { memMb: rec.description.memMb } : {}),
      ...(rec.description.labels !== undefined ? { labels: rec.description.labels } : {}),
      ...(rec.description.nodeLabels !== undefined
        ? { nodeLabels: rec.description.nodeLabels }
        : {}),
      ...(agent.spawners !== undefined ? { spawners: agent.spawners } : {}),
      ...(agent.functionWorkers !== undefined ? { functionWorkers: agent.functionWorkers } : {}),
      ...(agent.python !== undefined ? { python: agent.python } : {}),
      ...(agent.backfillLimit !== undefined ? { backfillLimit: agent.backfillLimit } : {}),
      ...(agent.launchers !== undefined ? { launchers: agent.launchers } : {}),
      ...(agent.output !== undefined ? { output: agent.output } : {}),
      ...(agent.taskJson !== undefined ? { taskJson: agent.taskJson } : {}),
      ...(agent.taskLimits !== undefined ? { taskLimits: agent.taskLimits } : {}),
      ...(agent.taskDirs !== undefined ? { taskDirs: agent.taskDirs } : {}),
      ...(agent.followOns !== undefined ? { followOns: agent.followOns } : {}),
      ...(agent.outputCapBytes !== undefined ? { outputCapBytes: agent.outputCapBytes } : {}),
      ...(agent.outputDiskBytes !== undefined ? { outputDiskBytes: agent.outputDiskBytes } : {}),
      ...(agent.updateWorkers !== undefined ? { updateWorkers: agent.updateWorkers } : {}),
      ...(agent.killGraceMs !== undefined ? { killGraceMs: agent.killGraceMs } : {}),
      ...(agent.clientTimeoutS !== undefined
        ? { heartbeatTimeoutMs: Math.round(agent.clientTimeoutS * 1000) }
        : {}),
      clientGraceMs: Math.round((agent.clientGraceS ?? DEFAULT_CLIENT_GRACE_S) * 1000),
      ...(agent.logLevel !== undefined ? { logLevel: agent.logLevel } : {}),
      ...(agent.subAgents !== undefined ? { subAgents: agent.subAgents } : {}),
      // where a resumed client of an embedded session that moved tells it its addresses
      addressFile: path.join(this.rt.dir, ADDRESS_FILE),
      ...this.rt.links.agentConfig(rec.uid),
    };
  }

  private ingest(ns: Notification[]): void {
    for (const n of ns) {
      if (n.kind !== 'pilot') continue;
      const pilot = this.pilots.get(n.uid);
      if (pilot === undefined) continue;
      for (const e of this.tracker.ingest(n)) {
        pilot.state = e.state;
        const reason = e.notification?.detail?.reason;
        if (reason !== undefined) pilot.reason = reason;
        const ts = e.notification?.ts;
        pilot.history.push(
          ts !== undefined
            ? { state: e.state, inferred: e.inferred, ts }
            : { state: e.state, inferred: e.inferred },
        );
        const info: StateInfo = { attempt: 1, inferred: e.inferred };
        if (reason !== undefined) info.reason = reason;
        if (ts !== undefined) info.ts = ts;
        this.delivery.deliver(() => this.callbacks.fire(pilot, e.state, info));
        this.waiters.update(pilot.uid, e.state);
      }
    }
  }

  /** At session close: end every pilot still alive (DONE if active) and wait for each. */
  private async shutdownAll(): Promise<void> {
    const alive = this.launcher.core.active;
    if (alive.length === 0) return;
    const ended = new Promise<void>((resolve) => {
      const check = (): void => {
        if (this.launcher.core.active.length === 0) {
          off();
          resolve();
        }
      };
      const off = this.rt.onPilotEnded(check);
      check();
    });
    this.launcher.core.onCancel(alive, true);
    await ended;
    this.launcher.close();
    // deliver the pilots' final states before the session stops following the store
    await this.waitPilots({ uids: alive, timeoutMs: 5_000 }).catch(() => undefined);
  }
}
