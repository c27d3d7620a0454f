import type { ControlContext } from '../client/control/context';
import type { PilotManager } from '../client/pilot-manager';
import type { Session } from '../client/session';
import type { Task } from '../client/task';
import type { TaskManager } from '../client/task-manager';

/** What the routes of the jobs service work on: its one session and its managers. */
export interface ServiceContext {
  readonly session: Session;
  readonly tmgr: TaskManager;
  readonly pmgr: PilotManager;
  /** The session's control handlers (the Unix control socket's table). */
  readonly control: ControlContext;
  /** A task of the session, whichever manager took it. */
  taskOf(uid: string): Task | undefined;
}
