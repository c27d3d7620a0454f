import type { Pilot } from '../client/pilot';
import type { Task } from '../client/task';

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
    history: p.history,
    ...(p.sandbox !== undefined ? { sandbox: p.sandbox } : {}),
  };
}
