import type { Pilot } from '../client/pilot';
import type { Task, TaskHistoryEntry } from '../client/task';
import type { Notification } from '../states/notification';
import { passedStates } from '../states/passed';

// What the HTTP API answers for a task or a pilot: plain JSON, the fields a client acts on.

/** A task in a list: small, so that a page of 1,000 stays small. */
export function taskSummary(t: Task): Record<string, unknown> {
  return {
    uid: t.uid,
    ...(t.description.name !== undefined ? { name: t.description.name } : {}),
    state: t.state,
    attempt: t.attempt,
    ...(t.pilot !== undefined ? { pilot: t.pilot } : {}),
    ...(t.reason !== undefined ? { reason: t.reason } : {}),
    ...(t.exitCode !== undefined ? { exitCode: t.exitCode } : {}),
  };
}

/** A task on its own: its summary, description, history, output tails, result and endpoint. */
export function taskDetail(t: Task): Record<string, unknown> {
  return {
    ...taskSummary(t),
    final: t.final,
    description: t.description,
    history: t.history,
    ...(t.signal !== undefined && t.signal !== null ? { signal: t.signal } : {}),
    ...(t.stdout !== undefined ? { stdout: t.stdout } : {}),
    ...(t.stderr !== undefined ? { stderr: t.stderr } : {}),
    ...(t.outputDropped !== undefined ? { outputDropped: t.outputDropped } : {}),
    ...(t.outputLost !== undefined ? { outputLost: t.outputLost } : {}),
    ...(t.result !== undefined ? { result: t.result } : {}),
    ...(t.endpoint !== undefined ? { endpoint: t.endpoint } : {}),
    ...(t.sandbox !== undefined ? { sandbox: t.sandbox } : {}),
  };
}

export function pilotView(p: Pilot): Record<string, unknown> {
  return {
    uid: p.uid,
    state: p.state,
    final: p.final,
    description: p.description,
    ...(p.reason !== undefined ? { reason: p.reason } : {}),
    nodes: p.nodes,
    warnings: p.warnings,
    ...(p.liveness !== undefined ? { liveness: p.liveness } : {}),
    history: p.history,
    ...(p.sandbox !== undefined ? { sandbox: p.sandbox } : {}),
  };
}

/**
 * A task's history with the time of each state its store holds: the tracker infers a state
 * whose notification had not arrived when a later one did (notifications come out of order, and
 * a final state ends what it takes), but the store keeps the late ones, and the quiet states'
 * times ride in later notifications (`detail.passed`). An entry the store has a time for is no
 * longer inferred; the others are left as they are.
 */
export function withStoredTimes(
  history: readonly TaskHistoryEntry[],
  stored: readonly Notification[],
): TaskHistoryEntry[] {
  const times = new Map<string, number>();
  const keep = (attempt: number, state: string, ts: number): void => {
    const key = `${attempt}:${state}`;
    if (!times.has(key)) times.set(key, ts);
  };
  for (const n of stored) {
    keep(n.attempt, n.state, n.ts);
    for (const [state, ts] of passedStates(n)) keep(n.attempt, state, ts);
  }
  return history.map((e) => {
    if (e.ts !== undefined) return e;
    const ts = times.get(`${e.attempt}:${e.state}`);
    return ts === undefined ? e : { state: e.state, attempt: e.attempt, inferred: false, ts };
  });
}
