import type { ClientSecurity } from '../transport/curve';
import type { TaskRecord } from '../generated';
import { InternalError } from '../errors';
import type { Logger } from '../lib/logger';
import type { Notification } from '../states/notification';
import { PIPELINE, type Hop } from '../states/pipeline';
import type { TaskComponent } from '../states/task-model';
import type { QueueSet } from '../components/shared/queue-set';
import type { LocalQueue } from '../transport/local-queue';

/** The hops of the task pipeline inside an agent, in order. */
export const AGENT_HOPS: readonly Hop[] = PIPELINE.filter((h) => h.side === 'agent');

/** The handler of one component's intake, and the log its refusals go to. */
export interface AgentIntake {
  handle: (tasks: TaskRecord[]) => void;
  log: Logger;
}

/**
 * The agent's task queues, built from the pipeline table: the first agent hop takes tasks from
 * the socket the client binds for this pilot, every later one is a LocalQueue. Each intake
 * accepts its hop's arrival state; the table, not the wiring, says which.
 */
export class AgentTaskQueues {
  private readonly locals = new Map<TaskComponent, LocalQueue<TaskRecord>>();

  constructor(
    private readonly queues: QueueSet,
    log: Logger,
  ) {
    for (const hop of AGENT_HOPS.slice(1)) {
      this.locals.set(hop.component, queues.local<TaskRecord>(hop.component, log));
    }
  }

  /** The local queue into `component` (the first agent hop has none: the client feeds it). */
  into(component: TaskComponent): LocalQueue<TaskRecord> {
    const q = this.locals.get(component);
    if (q === undefined) throw new InternalError(`agent-queues: no local queue into ${component}`);
    return q;
  }

  /**
   * Runs every agent component's intake: the first on the client's socket at `entry`, the rest
   * on their local queues. Refused tasks are FAILED through `notify`.
   */
  connect(
    entry: {
      address: string;
      security?: ClientSecurity | undefined;
      admit: (item: unknown) => string | undefined;
    },
    intakes: Readonly<Partial<Record<TaskComponent, AgentIntake>>>,
    notify: (ns: Notification[]) => void,
    now: () => number,
  ): void {
    AGENT_HOPS.forEach((hop, i) => {
      const intake = intakes[hop.component];
      if (intake === undefined) {
        throw new InternalError(`agent-queues: no intake for ${hop.component}`);
      }
      const it = {
        component: hop.component,
        arrives: hop.arrives,
        handle: intake.handle,
        notify,
        now,
      };
      if (i === 0) {
        this.queues.consume(
          entry.address,
          { ...it, admit: entry.admit },
          intake.log,
          entry.security,
        );
      } else this.queues.consumeLocal(this.into(hop.component), it, intake.log);
    });
  }
}
