import type { Reason, TaskRecord } from '../../generated';
import type { StageEffects } from '../shared/transition';
import type { ShapeWait } from './wait-reports';

/** The AgentScheduler only hands tasks on and notifies; slots come back as onReleased events. */
export interface AgentSchedulerEffects extends StageEffects {
  /**
   * Waiting reasons that changed, in a bulk, at most once per WAIT_REPORT_MS (wait-reports.ts).
   * Without it the scheduler keeps no reasons at all.
   */
  readonly reportWaits?: ((waits: ShapeWait[]) => void) | undefined;
  /**
   * Tasks that waited here until their walltimeS would pass the drain point, given back before
   * they started (the client starts each elsewhere, no retry used); `why` says so. Without it
   * they are kept until the pilot's end, which returns them.
   */
  readonly returnTasks?: ((tasks: TaskRecord[], why: Reason) => void) | undefined;
}
