import type { Reason, TaskRecord } from '../generated';
import { errorMeta } from '../errors';
import type { Logger } from '../lib/logger';
import type { ShapeWait } from '../components/agent-scheduler/wait-reports';
import type { ControlBus } from '../transport/control-bus';

/** Most items in one message of the uplink (what the control message schema takes). */
const BULK = 1_000;

/**
 * What the agent tells its client over the pilot's uplink (the session's control bus) besides
 * its life: waiting reasons, tasks it gives back, warnings. Each is sent once, fire-and-forget;
 * before the bus is up (`control()` undefined) nothing is sent.
 */
export class Uplink {
  constructor(
    private readonly pilot: string,
    private readonly log: Logger,
    private readonly control: () => ControlBus | undefined,
  ) {}

  /** Waiting reasons, in bulks the schema takes. */
  waits(waits: ShapeWait[]): void {
    const control = this.control();
    if (control === undefined) return; // no task is given before the agent announced itself
    for (let i = 0; i < waits.length; i += BULK) {
      const bulk = waits.slice(i, i + BULK);
      control
        .publish({ type: 'agent_waits', pilot: this.pilot, waits: bulk })
        .catch((e: unknown) => this.log.warn('waiting reasons not sent', errorMeta(e)));
    }
  }

  /**
   * Tasks too late to start before the drain point, to the client (which starts them
   * elsewhere); if that fails they stay with the scheduler until the end.
   */
  returns(tasks: TaskRecord[], reason: Reason): void {
    const control = this.control();
    if (control === undefined) return;
    this.log.info('tasks given back', { count: tasks.length, code: reason.code });
    for (let i = 0; i < tasks.length; i += BULK) {
      const bulk = tasks.slice(i, i + BULK).map((t) => ({ uid: t.uid, attempt: t.attempt }));
      control
        .publish({ type: 'agent_returns', pilot: this.pilot, tasks: bulk, reason })
        .catch((e: unknown) => this.log.warn('tasks not given back', errorMeta(e)));
    }
  }

  /** Something found wrong while the pilot runs (the pilot's warnings; agent_ready repeats it). */
  warning(warning: string): void {
    this.control()
      ?.publish({ type: 'agent_warning', pilot: this.pilot, warning })
      .catch((e: unknown) => this.log.warn('pilot warning not sent', errorMeta(e)));
  }
}
