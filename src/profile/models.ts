import type { RouterStatus } from '../generated';

// A session's models as its router journaled them (RouterEvent lines in journal.jsonl): each
// replica's life (started, ready with its load time, stopped and why, ended and how) and the
// swaps, for the profile, the timeline and the status of an ended session. Pure.

/** A journal line of a router: what it did, when. */
export interface RouterEntry {
  ts: number;
  event: { type: string; model: string } & Record<string, unknown>;
}

export interface ReplicaProfile {
  id: string;
  pilot?: string;
  /** Its service task was submitted. */
  started?: number;
  /** It answered its readiness check, `loadMs` after its start. */
  ready?: number;
  loadMs?: number;
  /** The router began to stop it (drain, then cancel), and why (idle, swap, handoff, ...). */
  stopping?: number;
  why?: string;
  /** Its task ended, with the reason the router heard; `expected`: it was stopped. */
  ended?: number;
  reason?: string;
  expected?: boolean;
  /** The replica it took over from before that one's pilot drained. */
  replaces?: string;
}

export interface ModelProfile {
  name: string;
  replicas: ReplicaProfile[];
  /** Its starts that stopped other models: when, and which. */
  swaps: { ts: number; stopped: string[] }[];
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** The models of a session from its router's journal lines, in the order they appeared. */
export function modelProfiles(entries: readonly RouterEntry[]): ModelProfile[] {
  const models = new Map<string, ModelProfile>();
  const replicas = new Map<string, ReplicaProfile>();
  for (const { ts, event: e } of entries) {
    let m = models.get(e.model);
    if (m === undefined) models.set(e.model, (m = { name: e.model, replicas: [], swaps: [] }));
    if (e.type === 'swap') {
      m.swaps.push({ ts, stopped: Array.isArray(e.stopped) ? e.stopped.map(String) : [] });
      continue;
    }
    const id = str(e.replica);
    if (id === undefined) continue;
    let r = replicas.get(id);
    if (r === undefined) {
      replicas.set(id, (r = { id }));
      m.replicas.push(r);
    }
    const pilot = str(e.pilot);
    if (pilot !== undefined) r.pilot = pilot;
    if (e.type === 'replica_starting') {
      r.started = ts;
      const replaces = str(e.replaces);
      if (replaces !== undefined) r.replaces = replaces;
    } else if (e.type === 'replica_ready') {
      r.ready = ts;
      if (typeof e.loadMs === 'number') r.loadMs = e.loadMs;
    } else if (e.type === 'replica_stopping') {
      r.stopping ??= ts;
      const why = str(e.why);
      if (why !== undefined) r.why ??= why;
    } else if (e.type === 'replica_ended') {
      r.ended = ts;
      const reason = str(e.reason);
      if (reason !== undefined) r.reason = reason;
      if (typeof e.expected === 'boolean') r.expected = e.expected;
    }
  }
  return [...models.values()];
}

/** What `status` shows of an ended session's router: what its models did (nothing runs). */
export function journaledRouterStatus(models: readonly ModelProfile[]): RouterStatus {
  return {
    models: models.map((m) => {
      const loads = m.replicas.flatMap((r) => (r.loadMs !== undefined ? [r.loadMs] : []));
      const last = m.replicas.filter((r) => r.loadMs !== undefined).at(-1)?.loadMs;
      return {
        name: m.name,
        queued: 0,
        inFlight: 0,
        ...(last !== undefined ? { lastLoadMs: last } : {}),
        loads: loads.length,
        ...(loads.length > 0
          ? {
              meanLoadMs: Math.round(loads.reduce((a, b) => a + b, 0) / loads.length),
              maxLoadMs: Math.max(...loads),
            }
          : {}),
        swaps: m.swaps.length,
        lost: m.replicas.filter((r) => r.expected === false).length,
        replicas: [],
      };
    }),
  };
}
