import type { Reason } from '../../generated';
import { IllegalTransitionError } from '../../errors';
import type { Clock, Timer } from '../../lib/clock';
import { ownerOf } from '../../states/model';
import type { Notification, NotificationDetail } from '../../states/notification';
import { PILOT_MODEL, type PilotState } from '../../states/pilot-model';
import { COMPONENTS } from '../../states/task-model';
import { reason } from '../shared/reasons';
import type { PilotLauncherEffects } from './effects';
import type { PilotRecord } from './pilot-record';

const ME = COMPONENTS.pilotLauncher;
type Final = 'DONE' | 'FAILED' | 'CANCELED';

interface Held {
  pilot: PilotRecord;
  cancelRequested: boolean;
  agentFinal?: { final: Final; message: string };
  killTimer?: Timer;
  /** Kills an agent that outlives its runtime limit by more than the grace period. */
  runtimeTimer?: Timer;
}

/**
 * Owns PMGR_LAUNCHING -> ... -> final: starts agents, marks a pilot ACTIVE when its agent
 * reports in, and decides the final state from how the agent ended.
 */
export class PilotLauncherCore {
  private readonly held = new Map<string, Held>();

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
      this.held.set(pilot.uid, { pilot, cancelRequested: false });
      notes.push(this.move(pilot, 'PMGR_LAUNCHING'));
    }
    this.effects.notify(notes);
    for (const pilot of pilots) this.effects.launch(pilot);
  }

  onLaunched(uid: string): void {
    const h = this.held.get(uid);
    if (h === undefined || h.pilot.state !== 'PMGR_LAUNCHING') return;
    this.effects.notify([this.move(h.pilot, 'PMGR_ACTIVE_PENDING')]);
    const limitMs = (h.pilot.description.runtimeMin ?? 60) * 60_000;
    h.runtimeTimer = this.clock.setTimeout(
      () => this.effects.kill(uid),
      limitMs + this.options.shutdownGraceMs,
    );
  }

  onLaunchFailed(uid: string, error: { message: string }): void {
    const h = this.held.get(uid);
    if (h === undefined) return;
    this.finish(h, 'FAILED', reason('E_LAUNCH', `cannot start the agent: ${error.message}`, ME));
  }

  onAgentReady(uid: string): void {
    const h = this.held.get(uid);
    if (h === undefined || h.pilot.state !== 'PMGR_ACTIVE_PENDING') return;
    this.effects.notify([this.move(h.pilot, 'PMGR_ACTIVE')]);
    if (h.cancelRequested) {
      this.effects.shutdownAgent(uid, 'CANCELED', 'pilot canceled by the user');
    }
  }

  /** The agent says how it is about to end (runtime limit, lost client, cancel). */
  onAgentFinal(uid: string, final: Final, message: string): void {
    const h = this.held.get(uid);
    if (h !== undefined) h.agentFinal = { final, message };
  }

  onAgentExited(
    uid: string,
    exit: { exitCode: number | null; signal: string | null; stderr: string },
  ): void {
    const h = this.held.get(uid);
    if (h === undefined) return;
    h.killTimer?.cancel();
    h.runtimeTimer?.cancel();
    if (h.cancelRequested) {
      return this.finish(h, 'CANCELED', reason('E_CANCELED', 'pilot canceled by the user', ME));
    }
    if (h.agentFinal !== undefined && exit.exitCode === 0) {
      const { final, message } = h.agentFinal;
      return this.finish(
        h,
        final,
        reason(final === 'DONE' ? 'I_PILOT_DONE' : 'E_PILOT_ENDED', message, ME),
      );
    }
    const how =
      exit.signal !== null ? `was killed by ${exit.signal}` : `exited with code ${exit.exitCode}`;
    const last = exit.stderr.trim().split('\n').slice(-3).join(' | ');
    this.finish(
      h,
      'FAILED',
      reason('E_AGENT_DIED', `agent ${how}${last !== '' ? `: ${last}` : ''}`, ME, {
        exitCode: exit.exitCode,
        signal: exit.signal,
      }),
    );
  }

  onCancel(uids: string[]): void {
    for (const uid of uids) {
      const h = this.held.get(uid);
      if (h === undefined || h.cancelRequested) continue;
      h.cancelRequested = true;
      // An agent hears control messages only once it has reported in: until then the
      // shutdown waits for onAgentReady, and the kill timer covers an agent that never does.
      if (h.pilot.state === 'PMGR_ACTIVE') {
        this.effects.shutdownAgent(uid, 'CANCELED', 'pilot canceled by the user');
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
    this.held.delete(h.pilot.uid);
    h.pilot.reason = why;
    this.effects.notify([this.move(h.pilot, final, { reason: why })]);
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
