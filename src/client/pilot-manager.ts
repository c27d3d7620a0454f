import * as os from 'node:os';
import * as path from 'node:path';
import type { PilotDescription } from '../generated';
import { ValidationError, errorMeta } from '../errors';
import type { Logger } from '../lib/logger';
import { parsePilotDescription } from '../lib/validate';
import { PILOT_MODEL } from '../states/pilot-model';
import type { Notification } from '../states/notification';
import { StateTracker } from '../states/state-tracker';
import { COMPONENTS } from '../states/task-model';
import { PilotLauncherCore } from '../components/pilot-launcher/core';
import { LocalLauncher } from '../components/pilot-launcher/local-launcher';
import type { PilotRecord } from '../components/pilot-launcher/pilot-record';
import { Listeners } from './listeners';
import { Pilot } from './pilot';
import type { Session } from './session';
import type { StateInfo } from './task';
import { Waiters } from './waiters';
import { validateAll } from './validate-all';

const FINALS = new Set(['DONE', 'FAILED', 'CANCELED']);

export interface PilotManagerOptions {
  /** How long a pilot's agent may take to shut down before it is killed (default 10 s). */
  shutdownGraceMs?: number;
}

/** Submits pilots, follows their states, cancels them; pilots end when the session closes. */
export class PilotManager {
  private readonly pilots = new Map<string, Pilot>();
  private readonly records = new Map<string, PilotRecord>();
  private readonly inputs = new Map<string, string>();
  private readonly tracker = new StateTracker(PILOT_MODEL);
  private readonly callbacks: Listeners<[Pilot, string, StateInfo]>;
  private readonly waiters = new Waiters();
  private readonly launcher: PilotLauncherCore;
  private readonly local: LocalLauncher;
  private readonly log: Logger;

  constructor(
    private readonly session: Session,
    options: PilotManagerOptions = {},
  ) {
    this.log = session.log.child({ component: COMPONENTS.pilotManager });
    this.callbacks = new Listeners(this.log);
    const launcherLog = session.log.child({ component: COMPONENTS.pilotLauncher });
    this.local = new LocalLauncher(
      {
        launched: (uid) => this.launcher.onLaunched(uid),
        launchFailed: (uid, e) => this.launcher.onLaunchFailed(uid, e),
        exited: (uid, exit) => this.launcher.onAgentExited(uid, exit),
      },
      launcherLog,
    );
    this.launcher = new PilotLauncherCore(
      {
        launch: (p) => this.launch(p),
        shutdownAgent: (uid, final, message) =>
          void session.control
            .publish({ type: 'shutdown_agent', pilot: uid, final, message })
            .catch((e: unknown) => launcherLog.error('shutdown publish failed', errorMeta(e))),
        kill: (uid) => this.local.kill(uid),
        notify: (ns) => session.notify(ns),
        ended: (uid, state, reason) => session.emitPilotEnded(uid, state, reason),
      },
      session.clock,
      { shutdownGraceMs: options.shutdownGraceMs ?? 10_000 },
    );
    session.control.on((msg) => {
      if (msg.type === 'agent_ready') this.launcher.onAgentReady(msg.pilot);
      else if (msg.type === 'agent_final') {
        this.launcher.onAgentFinal(msg.pilot, msg.final, msg.message);
      }
    });
    session.onNotifications((ns) => this.ingest(ns));
    session.atClose(() => this.shutdownAll());
  }

  /** Validates every description first (nothing is submitted if one is invalid). */
  async submitPilots(descriptions: PilotDescription[]): Promise<Pilot[]> {
    this.session.assertOpen();
    const descs = validateAll(descriptions, parsePilotDescription, 'PilotDescription');
    const out: Pilot[] = [];
    const records: PilotRecord[] = [];
    const notes: Notification[] = [];
    for (const d of descs) {
      const uid = d.uid ?? this.session.nextPilotUid();
      if (this.pilots.has(uid)) {
        throw new ValidationError(`invalid PilotDescription: uid '${uid}' is already used`, [
          { path: '/uid', message: `must be unique ('${uid}' is already used)` },
        ]);
      }
      const cores = d.cores ?? os.cpus().length;
      const sandbox = d.sandbox ?? path.join(this.session.dir, uid);
      const pilot = new Pilot(uid, d, cores, d.gpus ?? 0, sandbox);
      this.pilots.set(uid, pilot);
      const rec: PilotRecord = {
        uid,
        state: 'NEW',
        session: this.session.uid,
        description: d,
        cores,
        gpus: pilot.gpus,
        sandbox,
      };
      this.records.set(uid, rec);
      records.push(rec);
      const ts = this.session.clock.now();
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
      this.inputs.set(rec.uid, await this.session.pipeline.addPilotQueue(rec.uid));
    }
    this.session.notify(notes);
    this.launcher.onSubmit(records);
    return out;
  }

  onState(fn: (pilot: Pilot, state: string, info: StateInfo) => void): () => void {
    return this.callbacks.add(fn);
  }

  get(uid: string): Pilot | undefined {
    return this.pilots.get(uid);
  }

  list(): Pilot[] {
    return [...this.pilots.values()];
  }

  /** Waits until the pilots (default: all) reach one of `states` (default: a final state). */
  waitPilots(
    opts: { uids?: string[]; states?: string[]; timeoutMs?: number } = {},
  ): Promise<Pilot[]> {
    const uids = opts.uids ?? [...this.pilots.keys()];
    const states = new Set(opts.states ?? FINALS);
    return this.waiters
      .wait(uids, states, (u) => this.pilots.get(u)?.state, opts.timeoutMs, 'waitPilots')
      .then(() => uids.map((u) => this.pilots.get(u)!));
  }

  /** Asks the pilots' agents to shut down; their tasks end CANCELED. */
  cancelPilots(uids?: string[]): void {
    this.launcher.onCancel(uids ?? [...this.pilots.keys()]);
  }

  private launch(rec: PilotRecord): void {
    const agentInput = this.inputs.get(rec.uid)!;
    const agent = rec.description.agent ?? {};
    this.local.launch(rec, {
      session: this.session.uid,
      pilot: rec.uid,
      sandbox: rec.sandbox,
      sessionDir: this.session.dir,
      cores: rec.cores,
      gpus: rec.gpus,
      runtimeMin: rec.description.runtimeMin ?? 60,
      ...(rec.description.memMb !== undefined ? { memMb: rec.description.memMb } : {}),
      ...(agent.spawners !== undefined ? { spawners: agent.spawners } : {}),
      ...(agent.updateWorkers !== undefined ? { updateWorkers: agent.updateWorkers } : {}),
      ...(agent.killGraceMs !== undefined ? { killGraceMs: agent.killGraceMs } : {}),
      ...(agent.logLevel !== undefined ? { logLevel: agent.logLevel } : {}),
      addresses: this.session.agentAddresses(agentInput),
    });
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
        this.callbacks.fire(pilot, e.state, info);
        this.waiters.update(pilot.uid, e.state);
      }
    }
  }

  /** At session close: cancel every pilot still alive and wait until each has ended. */
  private async shutdownAll(): Promise<void> {
    const alive = this.launcher.active;
    if (alive.length === 0) return;
    const ended = new Promise<void>((resolve) => {
      const check = (): void => {
        if (this.launcher.active.length === 0) {
          off();
          resolve();
        }
      };
      const off = this.session.onPilotEnded(check);
      check();
    });
    this.launcher.onCancel(alive);
    await ended;
    // deliver the pilots' final states before the session stops following the store
    await this.waitPilots({ uids: alive, timeoutMs: 5_000 }).catch(() => undefined);
  }
}
