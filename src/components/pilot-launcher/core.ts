import type { Reason, SilentPart } from '../../generated';
import { IllegalTransitionError } from '../../errors';
import type { Clock, Timer } from '../../lib/clock';
import { ownerOf } from '../../states/model';
import type { Notification, NotificationDetail } from '../../states/notification';
import { PILOT_MODEL, type PilotState, type FinalPilotState } from '../../states/pilot-model';
import { COMPONENTS } from '../../states/task-model';
import { reason } from '../shared/reasons';
import type { PilotLauncherEffects } from './effects';
import type { PilotRecord } from './pilot-record';
import { SilenceWatch } from './silence';

const ME = COMPONENTS.pilotLauncher;
type Final = FinalPilotState;

interface Held {
  pilot: PilotRecord;
  cancelRequested: boolean;
  /** The cancel came from the session's close (a run's end), not from the user. */
  byClose?: boolean;
  agentFinal?: { final: Final; message: string };
  killTimer?: Timer;
  /** Kills an agent that outlives its runtime limit by more than the grace period. */
  runtimeTimer?: Timer;
  /** A batch job that was submitted and has not started: no agent runs yet. */
  queued: boolean;
  /** The runtime timer fired and asked for the kill. */
  runtimeKilled: boolean;
  /** The agent's silence (unknown, then lost), watched from when it runs. */
  silence?: SilenceWatch;
  /** For the profile: when its job started, and when it began to drain (asked to end). */
  jobStarted?: number;
  drainStarted?: number;
}

/** Without `agent.clientTimeoutS`: how long an agent may be silent (as it waits for us). */
const DEFAULT_SILENCE_S = 30;
/** An ended pilot's agent that is still heard is told to stop at most this often. */
const FENCE_REPEAT_MS = 5_000;

/** How a pilot's batch job ended, as its launcher saw it (batch/*.ts jobState). */
export interface JobEnd {
  /** What the batch system's state means: COMPLETED → DONE, cancelled → CANCELED, else FAILED. */
  final: Final;
  /** The batch system's words: `job 12 was cancelled (scancel)`, `job 12 ended TIMEOUT (...)`. */
  message: string;
  /** The job script's (the agent's) exit, when the batch system reports one. */
  exitCode: number | null;
  signal: string | null;
  /** Tail of the job's stderr file (the agent's stderr). */
  stderr: string;
}

/**
 * Owns PMGR_LAUNCHING -> ... -> final: starts agents, marks a pilot ACTIVE when its agent
 * reports in, and decides the final state from how the agent ended.
 *
 * Two kinds of launch: a local agent runs as soon as it is launched (`onLaunched(uid)`), and
 * its end is `onAgentExited`; a batch job is queued first (`onLaunched(uid, { queued: true })`),
 * starts later (`onJobStarted`, or the agent reporting in), and its end is `onJobEnded` with
 * the batch system's verdict. The runtime limit counts from the start, not from the submission.
 */
export class PilotLauncherCore {
  private readonly held = new Map<string, Held>();
  /** Pilots that ended: an agent of one that is heard again is a stale one (see onAgentHeartbeat). */
  private readonly ended = new Map<string, { final: Final; why: Reason; toldAt?: number }>();

  constructor(
    private readonly effects: PilotLauncherEffects,
    private readonly clock: Clock,
    private readonly options: { shutdownGraceMs: number },
  ) {}

  /** Pilots arrive in PMGR_LAUNCHING_PENDING (set by the PilotManager). */
  onSubmit(pilots: PilotRecord[]): void {
    // check the whole bulk first so a bad hand-over cannot leave half of it held, never launched
    for (const p of pilots) {
      if (p.state !== 'PMGR_LAUNCHING_PENDING') {
        throw new IllegalTransitionError(p.state, 'PMGR_LAUNCHING', ME);
      }
    }
    const notes: Notification[] = [];
    for (const pilot of pilots) {
      this.held.set(pilot.uid, {
        pilot,
        cancelRequested: false,
        queued: false,
        runtimeKilled: false,
      });
      notes.push(this.move(pilot, 'PMGR_LAUNCHING'));
    }
    this.effects.notify(notes);
    for (const pilot of pilots) this.effects.launch(pilot);
  }

  /**
   * The agent was started (local), or its batch job was accepted (`queued`: the job waits in
   * the queue; the runtime limit starts with onJobStarted).
   */
  onLaunched(uid: string, opts: { queued?: boolean } = {}): void {
    const h = this.held.get(uid);
    if (h === undefined || h.pilot.state !== 'PMGR_LAUNCHING') return;
    this.effects.notify([this.move(h.pilot, 'PMGR_ACTIVE_PENDING')]);
    if (opts.queued === true) {
      h.queued = true;
      // canceled while being submitted: nothing runs yet, so no shutdown to wait for
      if (h.cancelRequested) this.killQueued(h);
      return;
    }
    this.startRuntimeTimer(h);
  }

  /**
   * A resumed client takes back a pilot a previous client launched, in the state the store
   * says (`pilot.state`). Its agent reports in again (onAgentReady), its end arrives as for
   * any pilot; the runtime backstop counts from `startedAt` (absent: the job is still queued,
   * or nothing says when it started: it counts from now). A pilot whose launch left no trace
   * (no agent pid or job id: the client died while launching it) fails at once.
   */
  onAdopt(
    pilot: PilotRecord,
    opts: { launched: boolean; queued: boolean; startedAt?: number },
  ): void {
    const h: Held = { pilot, cancelRequested: false, queued: opts.queued, runtimeKilled: false };
    this.held.set(pilot.uid, h);
    if (!opts.launched) {
      this.onLaunchFailed(pilot.uid, {
        message: `the client died while launching the pilot (in ${pilot.state}) and left no trace of its agent`,
      });
      return;
    }
    if (pilot.state === 'PMGR_LAUNCHING') {
      this.effects.notify([this.move(pilot, 'PMGR_ACTIVE_PENDING')]);
    }
    if (!opts.queued) this.startRuntimeTimer(h, opts.startedAt);
    if (pilot.state === 'PMGR_ACTIVE') h.silence?.watchActive();
  }

  /** The pilot's batch job left the queue: the agent is starting on its nodes. */
  onJobStarted(uid: string): void {
    const h = this.held.get(uid);
    if (h === undefined || !h.queued) return;
    h.queued = false;
    this.startRuntimeTimer(h);
  }

  /** `code` defaults to E_LAUNCH (E_UNSUPPORTED: no launcher for the resource here). */
  onLaunchFailed(uid: string, error: { message: string; code?: Reason['code'] }): void {
    const h = this.held.get(uid);
    if (h === undefined) return;
    this.finish(
      h,
      'FAILED',
      reason(error.code ?? 'E_LAUNCH', `cannot start the agent: ${error.message}`, ME),
    );
  }

  onAgentReady(uid: string): void {
    const h = this.held.get(uid);
    if (h === undefined) return this.fence(uid);
    if (h.pilot.state !== 'PMGR_ACTIVE_PENDING') return;
    this.onJobStarted(uid); // its job runs, whether or not the launcher's poll has seen it yet
    const started = h.jobStarted === undefined ? undefined : { jobStarted: h.jobStarted };
    this.effects.notify([this.move(h.pilot, 'PMGR_ACTIVE', started)]);
    this.onAgentHeartbeat(uid); // asks a canceled pilot's agent to shut down
    h.silence?.watchActive();
  }

  /**
   * The agent is alive (it says so every second while it runs); `silent`: the parts its
   * heartbeat says it has not heard from (none: `[]`; undefined: as they were). An active
   * pilot's liveness (effects.liveness) is `unknown` after 3 heartbeat periods of silence (see
   * silence.ts), `ok` again once heard. One that is still running after a cancel and has not
   * said it is ending did not hear the shutdown (lost while its subscription was reconnecting,
   * after a resume): it is asked again.
   */
  onAgentHeartbeat(uid: string, silent?: readonly SilentPart[]): void {
    const h = this.held.get(uid);
    if (h === undefined) return this.fence(uid);
    h.silence?.heard(silent);
    if (h.cancelRequested && h.agentFinal === undefined && h.pilot.state === 'PMGR_ACTIVE') {
      this.effects.shutdownAgent(uid, 'CANCELED', cancelMessage(h));
    }
  }

  /** The agent says how it is about to end (runtime limit, lost client, cancel). */
  onAgentFinal(uid: string, final: Final, message: string): void {
    const h = this.held.get(uid);
    if (h === undefined) return;
    h.agentFinal = { final, message };
    h.drainStarted ??= this.clock.now();
  }

  onAgentExited(
    uid: string,
    exit: {
      exitCode: number | null;
      signal: string | null;
      stderr: string;
      /** Its last word left in its sandbox: stands where agent_final was not heard. */
      said?: { final: Final; message: string } | undefined;
    },
  ): void {
    const h = this.held.get(uid);
    if (h === undefined) return;
    h.killTimer?.cancel();
    h.runtimeTimer?.cancel();
    if (h.cancelRequested && h.byClose === true && h.pilot.state === 'PMGR_ACTIVE') {
      // it served until its session no longer needed it: its job is done
      return this.finish(h, 'DONE', reason('I_PILOT_DONE', "ended by its session's close", ME));
    }
    if (h.cancelRequested) {
      return this.finish(h, 'CANCELED', reason('E_CANCELED', cancelMessage(h), ME));
    }
    // an adopted agent's exit status is unknown (null, null): its last word stands
    const clean = exit.exitCode === 0 || (exit.exitCode === null && exit.signal === null);
    const said = h.agentFinal ?? exit.said;
    if (said !== undefined && clean) {
      const { final, message } = said;
      return this.finish(
        h,
        final,
        reason(final === 'DONE' ? 'I_PILOT_DONE' : 'E_PILOT_ENDED', message, ME),
      );
    }
    const how =
      exit.signal !== null
        ? `was killed by ${exit.signal}`
        : exit.exitCode !== null
          ? `exited with code ${exit.exitCode}`
          : 'ended without saying why (it was adopted from a previous client: exit status unknown)';
    const last = tail(exit.stderr);
    this.finish(
      h,
      'FAILED',
      reason('E_AGENT_DIED', `agent ${how}${last !== '' ? `: ${last}` : ''}`, ME, {
        exitCode: exit.exitCode,
        signal: exit.signal,
      }),
    );
  }

  /**
   * The pilot's batch job ended (or the launcher gave it up: it can never start, or Slurm lost
   * it). A user's cancel wins; a job that completed ends the pilot as the agent said
   * (onAgentExited); a job cancelled from outside ends it CANCELED, unless it was our own kill
   * at the runtime limit; any other end is FAILED with the batch system's words.
   */
  onJobEnded(uid: string, end: JobEnd): void {
    const h = this.held.get(uid);
    if (h === undefined) return;
    const exit = { exitCode: end.exitCode, signal: end.signal, stderr: end.stderr };
    if (h.cancelRequested || end.final === 'DONE') return this.onAgentExited(uid, exit);
    const detail = { exitCode: end.exitCode, signal: end.signal };
    if (end.final === 'CANCELED' && h.runtimeKilled) {
      const min = h.pilot.description.runtimeMin ?? 60;
      return this.finish(
        h,
        'FAILED',
        reason(
          'E_RUNTIME_EXCEEDED',
          `the agent outlived its runtime limit (${min} min) by ${this.options.shutdownGraceMs} ms and was killed: ${end.message}`,
          ME,
          detail,
        ),
      );
    }
    if (end.final === 'CANCELED') {
      return this.finish(h, 'CANCELED', reason('E_JOB_CANCELED', end.message, ME, detail));
    }
    const last = tail(end.stderr);
    this.finish(
      h,
      'FAILED',
      reason('E_JOB_FAILED', `${end.message}${last !== '' ? `: ${last}` : ''}`, ME, detail),
    );
  }

  /**
   * Ends the pilots: a user's cancel ends them CANCELED; the session's close (`byClose`) ends
   * an active one DONE (it served to the end of its session), one not yet active CANCELED,
   * saying the session closed. Their agents end the tasks they hold CANCELED either way.
   */
  onCancel(uids: string[], byClose = false): void {
    for (const uid of uids) {
      const h = this.held.get(uid);
      if (h === undefined || h.cancelRequested) continue;
      h.cancelRequested = true;
      if (byClose) h.byClose = true;
      h.drainStarted ??= this.clock.now();
      if (h.queued) {
        this.killQueued(h); // no agent runs yet: remove the job from the queue now
        continue;
      }
      // An agent hears control messages only once it has reported in: until then the
      // shutdown waits for onAgentReady, and the kill timer covers an agent that never does.
      if (h.pilot.state === 'PMGR_ACTIVE') {
        this.effects.shutdownAgent(uid, 'CANCELED', cancelMessage(h));
      }
      h.killTimer = this.clock.setTimeout(
        () => this.effects.kill(uid),
        this.options.shutdownGraceMs,
      );
    }
  }

  /** Pilots not yet final. */
  get active(): string[] {
    return [...this.held.keys()];
  }

  /**
   * The agent runs from now (started, its job started, or adopted): its runtime counts, and it
   * must be heard within the silence limit (an agent stopped before it even reported in, too).
   */
  private startRuntimeTimer(h: Held, startedAt?: number): void {
    h.jobStarted ??= startedAt ?? this.clock.now();
    h.silence?.stop();
    h.silence = new SilenceWatch(this.clock, this.silenceLimitMs(h), {
      changed: (liveness) => this.effects.liveness(h.pilot.uid, liveness),
      lost: (silentMs, limitMs) => this.lost(h, silentMs, limitMs),
    });
    const limitMs = (h.pilot.description.runtimeMin ?? 60) * 60_000;
    const elapsed = startedAt === undefined ? 0 : Math.max(0, this.clock.now() - startedAt);
    h.runtimeTimer = this.clock.setTimeout(
      () => {
        h.runtimeKilled = true;
        this.effects.kill(h.pilot.uid);
      },
      Math.max(0, limitMs - elapsed) + this.options.shutdownGraceMs,
    );
  }

  private silenceLimitMs(h: Held): number {
    return (h.pilot.description.agent?.clientTimeoutS ?? DEFAULT_SILENCE_S) * 1000;
  }

  /**
   * An agent that stops answering (stopped, hung, or cut off) is a lost pilot: FAILED with how
   * long it was silent, and killed.
   */
  private lost(h: Held, silentMs: number, limitMs: number): void {
    this.effects.kill(h.pilot.uid);
    this.finish(
      h,
      'FAILED',
      reason(
        'E_AGENT_SILENT',
        `the agent stopped answering: no heartbeat for ${Math.round(silentMs / 1000)} s (limit ${limitMs / 1000} s); it was killed`,
        ME,
        { silentMs },
      ),
    );
  }

  /**
   * An agent of a pilot that ended speaks: it was declared lost (stopped, cut off) and its
   * kill did not reach it, and its tasks were taken over. It is told to end them and exit;
   * whatever it still reports of them is refused (fencing). Asked again while it is heard.
   */
  private fence(uid: string): void {
    const e = this.ended.get(uid);
    const now = this.clock.now();
    if (e === undefined || (e.toldAt !== undefined && now - e.toldAt < FENCE_REPEAT_MS)) return;
    e.toldAt = now;
    this.effects.shutdownAgent(
      uid,
      e.final,
      `the pilot ended ${e.final} (${e.why.message}) and its tasks were taken over: ending them`,
    );
  }

  private killQueued(h: Held): void {
    h.killTimer?.cancel();
    delete h.killTimer;
    this.effects.kill(h.pilot.uid);
  }

  private finish(h: Held, wanted: Final, why: Reason): void {
    // DONE means the pilot was ACTIVE until its end; ending earlier is a failure, and its
    // reason must say so (not carry the agent's I_PILOT_DONE)
    let final = wanted;
    if (wanted === 'DONE' && h.pilot.state !== 'PMGR_ACTIVE') {
      final = 'FAILED';
      why = reason(
        'E_NEVER_ACTIVE',
        `the agent ended before the pilot became active (in ${h.pilot.state}): ${why.message}`,
        ME,
        { state: h.pilot.state },
      );
    }
    h.killTimer?.cancel();
    h.runtimeTimer?.cancel();
    h.silence?.stop();
    this.held.delete(h.pilot.uid);
    this.ended.set(h.pilot.uid, { final, why });
    h.pilot.reason = why;
    const detail: NotificationDetail = { reason: why };
    if (h.jobStarted !== undefined) detail.jobStarted = h.jobStarted;
    if (h.drainStarted !== undefined) detail.drainStarted = h.drainStarted;
    this.effects.notify([this.move(h.pilot, final, detail)]);
    this.effects.ended(h.pilot.uid, final, why);
  }

  private move(pilot: PilotRecord, to: PilotState, detail?: NotificationDetail): Notification {
    const from = pilot.state as PilotState;
    if (ownerOf(PILOT_MODEL, from, to) !== ME) throw new IllegalTransitionError(from, to, ME);
    pilot.state = to;
    const n: Notification = {
      kind: 'pilot',
      uid: pilot.uid,
      attempt: 1,
      state: to,
      ts: this.clock.now(),
      component: ME,
    };
    if (detail !== undefined) n.detail = detail;
    return n;
  }
}

/** The last three lines of a stderr tail, on one line. */
function tail(stderr: string): string {
  return stderr.trim().split('\n').slice(-3).join(' | ');
}

/** Why a pilot being canceled ends: what its agent and its reason say. */
function cancelMessage(h: Held): string {
  if (h.byClose !== true) return 'pilot canceled by the user';
  return h.pilot.state === 'PMGR_ACTIVE'
    ? 'its session closed'
    : 'its session closed before the pilot became active';
}
