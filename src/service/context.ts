import type { ControlContext } from '../client/control/context';
import type { PilotManager } from '../client/pilot-manager';
import type { Session } from '../client/session';
import type { Task } from '../client/task';
import type { Notification } from '../states/notification';
import type { TaskManager } from '../client/task-manager';
import type { DeletedTasks } from './deleted';
import type { EventFeed } from './event-feed';
import type { ServiceFiles } from './staging';

/** What the routes of the jobs service work on: its one session and its managers. */
export interface ServiceContext {
  readonly session: Session;
  readonly tmgr: TaskManager;
  readonly pmgr: PilotManager;
  /** The session's control handlers (the Unix control socket's table). */
  readonly control: ControlContext;
  /** A task of the session, whichever manager took it; undefined once deleted. */
  taskOf(uid: string): Task | undefined;
  /** Every notification the session's store holds of a task (in store order). */
  storedHistory(uid: string): Promise<Notification[]>;
  /** The session's tasks in the order they were taken on, deleted ones left out. */
  tasks(): Iterable<Task>;
  /** A uid no task of the session has, nor a deleted one, nor any `taken` says. */
  freshUid(taken: (uid: string) => boolean): string;
  readonly deleted: DeletedTasks;
  /** The session's events, rendered once for every event stream. */
  readonly events: EventFeed;
  /** Where its tasks stage on the service's host. */
  readonly files: ServiceFiles;
}
