import type { Reason } from '../../../generated';
import { COMPONENTS } from '../../../states/task-model';
import type { ExecutorKind, TaskMode } from './kind';
import { functionKind } from './function';
import { processKind } from './process';
import { serviceKind } from './service';

/** The executor kind of each task mode. A mode the schema allows may have none yet. */
export const EXECUTOR_KINDS: Readonly<Partial<Record<TaskMode, ExecutorKind>>> = {
  executable: processKind,
  function: functionKind,
  service: serviceKind,
};

/** The kind that runs tasks of `mode` (default 'executable'), or why there is none. */
export function kindFor(
  mode: string | undefined,
): { ok: true; kind: ExecutorKind } | { ok: false; reason: Reason } {
  const m = mode ?? 'executable';
  const kind = Object.hasOwn(EXECUTOR_KINDS, m) ? EXECUTOR_KINDS[m as TaskMode] : undefined;
  if (kind !== undefined) return { ok: true, kind };
  return {
    ok: false,
    reason: {
      code: 'E_MODE_UNSUPPORTED',
      message: `this agent cannot run tasks of mode '${m}': it runs ${Object.keys(EXECUTOR_KINDS)
        .map((k) => `'${k}'`)
        .join(', ')}`,
      component: COMPONENTS.executor,
      detail: { mode: m, modes: Object.keys(EXECUTOR_KINDS) },
    },
  };
}
