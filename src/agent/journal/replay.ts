import type { TaskRecord } from '../../generated';

/**
 * One entry of an agent's journal of held tasks (journal.ts). `start`: the agent's first start
 * (its runtime counts from there); `in`: tasks received; `x`: tasks handed to the Executor (with
 * their slots), before any job of theirs starts; `out`: tasks that left the agent (handed back,
 * given back, or final), by key.
 */
export type JournalEntry =
  | { k: 'start'; at: number }
  | { k: 'in'; tasks: TaskRecord[] }
  | { k: 'x'; at: number; tasks: TaskRecord[] }
  | { k: 'out'; keys: string[] };

/** What a restarted agent takes over from the journal of the agents before it. */
export interface HeldTasks {
  /** When the pilot's first agent started (epoch ms); undefined when the journal says none. */
  startedAt: number | undefined;
  /** Received and not yet executing: they go through the agent again. */
  queued: TaskRecord[];
  /**
   * Handed to the Executor (`since`: when): their jobs may still run (on a sub-agent) or died
   * with the agent.
   */
  executing: { task: TaskRecord; since: number }[];
  /** Every task key the journal has seen come in: a copy sent again is dropped. */
  seen: Map<string, number>;
}

/** A task's key in the journal: its uid and attempt. */
export function heldKey(t: Pick<TaskRecord, 'uid' | 'attempt'>): string {
  return `${t.uid}#${t.attempt}`;
}

/** Folds journal entries, oldest first, into what is still held. Pure. */
export function replayJournal(entries: Iterable<JournalEntry>): HeldTasks {
  let startedAt: number | undefined;
  /** `x`: when it was handed to the Executor. */
  const held = new Map<string, { rec: TaskRecord; x?: number }>();
  const seen = new Map<string, number>();
  for (const e of entries) {
    switch (e.k) {
      case 'start':
        startedAt ??= e.at;
        break;
      case 'in':
      case 'x':
        for (const t of e.tasks) {
          held.set(heldKey(t), e.k === 'x' ? { rec: t, x: e.at } : { rec: t });
          if ((seen.get(t.uid) ?? 0) < t.attempt) seen.set(t.uid, t.attempt);
        }
        break;
      case 'out':
        for (const k of e.keys) held.delete(k);
        break;
    }
  }
  const queued: TaskRecord[] = [];
  const executing: { task: TaskRecord; since: number }[] = [];
  for (const { rec, x } of held.values()) {
    if (x === undefined) queued.push(rec);
    else executing.push({ task: rec, since: x });
  }
  return { startedAt, queued, executing, seen };
}
