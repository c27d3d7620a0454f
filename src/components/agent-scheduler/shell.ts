import type { Reason, TaskRecord } from '../../generated';
import type { Notification } from '../../states/notification';
import { sendLogged } from '../shared/shell';
import type { ShellDeps } from '../shared/shell-deps';
import { AgentSchedulerCore } from './core';
import type { AgentSchedulerEffects } from './effects';
import type { LauncherLimit } from './launchers';
import type { NodeResources } from './node-state';
import type { ShapeWait } from './wait-reports';

/** Runs AgentSchedulerCore: its decisions need no I/O beyond handing tasks on. */
export class AgentSchedulerShell implements AgentSchedulerEffects {
  readonly core: AgentSchedulerCore;

  constructor(
    private readonly deps: ShellDeps,
    nodes: NodeResources[],
    /** The agent's node (function tasks run there). */
    home?: string,
    /** Where waiting reasons go (the client, over the agent's control uplink); none: kept off. */
    private readonly waits?: (waits: ShapeWait[]) => void,
    /** Later tasks that may pass a head that does not fit before it gets a reservation. */
    backfillLimit?: number,
    /** Whether short tasks may queue on running ones' slots (AgentSchedulerCore). */
    followOns = false,
    /** Where tasks given back before the drain point go (the client); none: kept to the end. */
    private readonly returns?: (tasks: TaskRecord[], why: Reason) => void,
    /** The pilot's cap on tasks that need a launcher (agent.launchers), and which do. */
    launchers?: LauncherLimit,
  ) {
    this.core = new AgentSchedulerCore(
      this,
      deps.clock,
      nodes,
      home,
      undefined,
      backfillLimit,
      followOns,
      launchers,
    );
  }

  notify(notifications: Notification[]): void {
    this.deps.notes.send(notifications);
  }

  forward(tasks: TaskRecord[]): void {
    sendLogged(this.deps.next, tasks, this.deps.log, 'forward');
  }

  get reportWaits(): ((waits: ShapeWait[]) => void) | undefined {
    return this.waits;
  }

  get returnTasks(): ((tasks: TaskRecord[], why: Reason) => void) | undefined {
    return this.returns;
  }
}
