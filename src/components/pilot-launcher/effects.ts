import type { PilotLiveness, Reason } from '../../generated';
import type { Notification } from '../../states/notification';
import type { PilotRecord } from './pilot-record';
import type { FinalPilotState } from '../../states/pilot-model';

export interface PilotLauncherEffects {
  /** Starts the pilot's agent; the outcome comes back as onLaunched / onLaunchFailed. */
  launch(pilot: PilotRecord): void;
  /** Asks the agent to shut down (it ends its tasks and exits). */
  shutdownAgent(uid: string, final: FinalPilotState, message: string): void;
  /** Kills the agent outright (it did not shut down in time). */
  kill(uid: string): void;
  notify(notifications: Notification[]): void;
  /**
   * An active pilot's liveness changed: its agent went silent (`unknown`, since it was last
   * heard), was heard again (`ok`), or the parts it reports silent changed.
   */
  liveness(uid: string, liveness: PilotLiveness): void;
  /** The pilot reached a final state: no task may go to it any more. */
  ended(uid: string, state: FinalPilotState, reason?: Reason): void;
}
