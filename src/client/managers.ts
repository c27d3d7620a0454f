import type { PilotManager } from './pilot-manager';
import type { ClientRuntime } from './runtime';
import type { TaskManager } from './task-manager';

/** A session's managers, for what reads or acts across all of them (the control socket). */
export interface Managers {
  readonly pilots: Set<PilotManager>;
  readonly tasks: Set<TaskManager>;
}

const byRuntime = new WeakMap<ClientRuntime, Managers>();

/** The managers created on `rt` so far (each adds itself as it is made). */
export function managersOf(rt: ClientRuntime): Managers {
  let m = byRuntime.get(rt);
  if (m === undefined) byRuntime.set(rt, (m = { pilots: new Set(), tasks: new Set() }));
  return m;
}
