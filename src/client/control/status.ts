import { TASK_STATES, type TaskState } from '../../states/task-model';
import { explainTask } from '../tasks/explain';
import type { ControlRuntime } from './context';
import type { ManagedTasks, Managers } from './managers';
import type { CancelResult, RunningTask, SessionState, SessionStatus } from './protocol';

/** States before the task's own command runs: a task in one of them is pending. */
const PENDING: ReadonlySet<TaskState> = new Set(
  TASK_STATES.slice(0, TASK_STATES.indexOf('AGENT_EXECUTING')),
);

/**
 * The live session now. Tasks are visited in submission order (the registry's), so the first
 * pending ones met are the oldest; only those shown are explained.
 */
export function liveStatus(
  rt: ControlRuntime,
  managers: Managers,
  state: SessionState,
  limits: { pending?: number; running?: number } = {},
): SessionStatus {
  const maxPending = limits.pending ?? 5;
  const maxRunning = limits.running ?? 20;
  const counts: Partial<Record<TaskState, number>> = {};
  const running: RunningTask[] = [];
  const pending: string[] = [];
  let total = 0;
  let runningTotal = 0;
  let pendingTotal = 0;
  /** Per pilot, the cores and GPUs its executing tasks asked for (all their ranks). */
  const busy = new Map<string, [number, number]>();
  const failures: Record<string, number> = {};
  for (const t of rt.tasks.values()) {
    total++;
    counts[t.state] = (counts[t.state] ?? 0) + 1;
    if (t.state === 'FAILED' && t.reason !== undefined) {
      failures[t.reason.code] = (failures[t.reason.code] ?? 0) + 1;
    }
    if (t.state === 'AGENT_EXECUTING') {
      if (t.pilot !== undefined) {
        const d = t.description;
        const b = busy.get(t.pilot) ?? [0, 0];
        b[0] += (d.ranks ?? 1) * (d.coresPerRank ?? 1);
        b[1] += (d.ranks ?? 1) * (d.gpusPerRank ?? 0);
        busy.set(t.pilot, b);
      }
      if (runningTotal++ < maxRunning) {
        const since = t.history.at(-1)?.ts;
        running.push({
          uid: t.uid,
          ...(t.description.name !== undefined ? { name: t.description.name } : {}),
          ...(t.pilot !== undefined ? { pilot: t.pilot } : {}),
          ...(since !== undefined ? { since } : {}),
        });
      }
    } else if (PENDING.has(t.state) && pendingTotal++ < maxPending) {
      pending.push(t.uid);
    }
  }
  const pilots = [...managers.pilots].flatMap((m) => m.list());
  return {
    session: rt.uid,
    dir: rt.dir,
    state,
    pid: process.pid,
    pilots: pilots.map((p) => ({
      uid: p.uid,
      state: p.state,
      resource: p.description.resource,
      cores: p.cores,
      gpus: p.gpus,
      // calls that share a core's lanes may ask more than it has: never more than the pilot's
      busyCores: Math.min(busy.get(p.uid)?.[0] ?? 0, p.cores),
      busyGpus: Math.min(busy.get(p.uid)?.[1] ?? 0, p.gpus),
      ...(p.reason !== undefined ? { reason: p.reason } : {}),
      ...(p.warnings.length > 0 ? { warnings: p.warnings } : {}),
      ...(p.liveness !== undefined ? { liveness: p.liveness } : {}),
    })),
    counts,
    total,
    failures,
    running,
    runningTotal,
    pending: pending.map((u) => explainTask(rt, u)!),
    pendingTotal,
    ...(managers.routers.size > 0 ? { routers: [...managers.routers].map((r) => r.status()) } : {}),
  };
}

/**
 * Cancels through each task's own TaskManager (`cancelTasks`, as a user's call would); uids the
 * session does not have, or whose task already ended, are reported and left alone.
 */
export async function cancelLive(
  rt: ControlRuntime,
  managers: Managers,
  uids: readonly string[],
): Promise<CancelResult> {
  const result: CancelResult = { canceled: [], unknown: [], final: [] };
  const byManager = new Map<ManagedTasks, string[]>();
  for (const uid of new Set(uids)) {
    const task = rt.tasks.get(uid);
    const owner = [...managers.tasks].find((m) => m.get(uid) !== undefined);
    if (task === undefined || owner === undefined) result.unknown.push(uid);
    else if (task.final) result.final.push(uid);
    else {
      const list = byManager.get(owner);
      if (list === undefined) byManager.set(owner, [uid]);
      else list.push(uid);
      result.canceled.push(uid);
    }
  }
  for (const [m, list] of byManager) await m.cancelTasks(list);
  return result;
}
