import type { RouterStatus } from '../../generated';
import type { Pilot } from '../pilot';
import type { Task } from '../task';

/** What the control socket reads of a PilotManager: its pilots. */
export interface ManagedPilots {
  get(uid: string): Pilot | undefined;
  list(): Pilot[];
}

/** What the control socket reads of a TaskManager, and how it cancels through it. */
export interface ManagedTasks {
  get(uid: string): Task | undefined;
  cancelTasks(uids?: string[]): Promise<void>;
}

/** What the control socket reads of a model router running in the session: how it stands. */
export interface ManagedRouter {
  status(): RouterStatus;
}

/**
 * A session's managers, for what reads or acts across all of them (the control socket). The
 * managers add themselves; this file names what it needs of them and imports none.
 */
export interface Managers {
  readonly pilots: Set<ManagedPilots>;
  readonly tasks: Set<ManagedTasks>;
  /** Model routers (docs/router.md), from their start to their close. */
  readonly routers: Set<ManagedRouter>;
}

const byRuntime = new WeakMap<object, Managers>();

/** The managers created on a session's runtime so far (each adds itself as it is made). */
export function managersOf(runtime: object): Managers {
  let m = byRuntime.get(runtime);
  if (m === undefined) {
    byRuntime.set(runtime, (m = { pilots: new Set(), tasks: new Set(), routers: new Set() }));
  }
  return m;
}
