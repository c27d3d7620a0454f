import {
  closeSync,
  existsSync,
  fsyncSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import * as path from 'node:path';
import type { TaskRecord } from '../../generated';
import { PRIVATE_FILE } from '../../lib/private-files';
import type { Notification } from '../../states/notification';
import { isFinalTaskState, type TaskState } from '../../states/task-model';
import { decode, encode } from '../../transport/codec';
import { heldKey, replayJournal, type HeldTasks, type JournalEntry } from './replay';

/** The journal is rewritten with only what is held once it grows past this... */
const COMPACT_MIN_BYTES = 64 * 1024 * 1024;
/** ...and past this many times its last rewritten size. */
const COMPACT_GROWTH = 4;
/** Tasks per entry of a rewritten journal. */
const CHUNK = 1_000;

/**
 * The agent's journal of the tasks it holds, so that an agent started again in the same
 * allocation (agent.restarts) takes over what the one before it held: the tasks it had
 * received, which of them it had handed to the Executor (their jobs may still run on the nodes'
 * sub-agents), and which had left. One file in the pilot sandbox, length-prefixed msgpack
 * entries, each appended with one write as its bulk passes (a dead process loses no write it
 * made; the journal is for the agent's death, not its node's, so it is not fsync'd per entry).
 * It is rewritten with only what is held when it grows large, and at each start.
 */
export class AgentJournal {
  private fd: number;
  private bytes = 0;
  private compactAt = COMPACT_MIN_BYTES;
  /** `x`: when it was handed to the Executor. */
  private readonly held = new Map<string, { rec: TaskRecord; x?: number }>();
  private closed = false;

  private constructor(
    private readonly file: string,
    private readonly startedAt: number,
    prior: HeldTasks,
  ) {
    for (const rec of prior.queued) this.held.set(heldKey(rec), { rec });
    for (const e of prior.executing) this.held.set(heldKey(e.task), { rec: e.task, x: e.since });
    this.fd = this.rewrite();
  }

  /**
   * Opens `file`: what an earlier agent of the pilot left there is read and returned (empty
   * for a first start), and the file is rewritten with it alone.
   */
  static open(file: string, now: number): { journal: AgentJournal; prior: HeldTasks } {
    // a journal left by an agent before this one (it died): what it held is this one's now
    const prior = existsSync(file)
      ? replayJournal(readEntries(readFileSync(file)))
      : replayJournal([]);
    const journal = new AgentJournal(file, prior.startedAt ?? now, prior);
    return { journal, prior };
  }

  /** When the pilot's first agent started (epoch ms). */
  get firstStart(): number {
    return this.startedAt;
  }

  /** Tasks received (before the input stager sees them); returns them. */
  received(tasks: TaskRecord[]): TaskRecord[] {
    if (tasks.length === 0) return tasks;
    for (const rec of tasks) this.held.set(heldKey(rec), { rec });
    this.append({ k: 'in', tasks });
    return tasks;
  }

  /** Tasks handed to the Executor at `at`, with their slots (before a job starts); returns them. */
  executing(tasks: TaskRecord[], at: number): TaskRecord[] {
    if (tasks.length === 0) return tasks;
    for (const rec of tasks) this.held.set(heldKey(rec), { rec, x: at });
    this.append({ k: 'x', at, tasks });
    return tasks;
  }

  /** Tasks that left the agent (handed back or given back to the client). */
  left(tasks: readonly Pick<TaskRecord, 'uid' | 'attempt'>[]): void {
    const keys: string[] = [];
    for (const t of tasks) {
      const k = heldKey(t);
      if (this.held.delete(k)) keys.push(k);
    }
    if (keys.length > 0) this.append({ k: 'out', keys });
  }

  /** `sender`, with each bulk it sends journalled as having left (tasks handed back). */
  handingBack(sender: { send(value: unknown): Promise<void> }): {
    send(value: unknown): Promise<void>;
  } {
    return {
      send: (value: unknown) => {
        const sent = sender.send(value);
        if (Array.isArray(value)) this.left(value as TaskRecord[]);
        return sent;
      },
    };
  }

  /** Tasks that reached a final state here (their notifications say so). */
  ended(notifications: readonly Notification[]): void {
    let finals: { uid: string; attempt: number }[] | undefined;
    for (const n of notifications) {
      if (n.kind === 'task' && isFinalTaskState(n.state as TaskState)) (finals ??= []).push(n);
    }
    if (finals !== undefined) this.left(finals);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
  }

  private append(e: JournalEntry): void {
    if (this.closed) return;
    const n = writeSync(this.fd, frameOf(e));
    this.bytes += n;
    if (this.bytes >= this.compactAt) {
      closeSync(this.fd);
      this.fd = this.rewrite();
    }
  }

  /** Writes what is held to a new file that replaces the journal; returns its fd (appending). */
  private rewrite(): number {
    const tmp = `${this.file}.new`;
    const fd = openSync(tmp, 'w', PRIVATE_FILE);
    const entries: JournalEntry[] = [{ k: 'start', at: this.startedAt }];
    const queued: TaskRecord[] = [];
    const byStart = new Map<number, TaskRecord[]>();
    for (const { rec, x } of this.held.values()) {
      if (x === undefined) queued.push(rec);
      else if (byStart.has(x)) byStart.get(x)!.push(rec);
      else byStart.set(x, [rec]);
    }
    for (let i = 0; i < queued.length; i += CHUNK) {
      entries.push({ k: 'in', tasks: queued.slice(i, i + CHUNK) });
    }
    for (const [at, tasks] of byStart) {
      for (let i = 0; i < tasks.length; i += CHUNK) {
        entries.push({ k: 'x', at, tasks: tasks.slice(i, i + CHUNK) });
      }
    }
    let bytes = 0;
    for (const e of entries) bytes += writeSync(fd, frameOf(e));
    fsyncSync(fd);
    renameSync(tmp, this.file);
    this.bytes = bytes;
    this.compactAt = Math.max(COMPACT_MIN_BYTES, bytes * COMPACT_GROWTH);
    return fd;
  }
}

/** One entry: its length (4 bytes, big-endian), then its msgpack. */
function frameOf(e: JournalEntry): Buffer {
  const body = encode(e);
  const out = Buffer.allocUnsafe(4 + body.length);
  out.writeUInt32BE(body.length, 0);
  body.copy(out, 4);
  return out;
}

/** The entries of a journal file; a torn last entry (the agent died writing it) is left out. */
export function* readEntries(buf: Buffer): Generator<JournalEntry> {
  let at = 0;
  while (at + 4 <= buf.length) {
    const len = buf.readUInt32BE(at);
    if (at + 4 + len > buf.length) return;
    yield decode(buf.subarray(at + 4, at + 4 + len)) as JournalEntry;
    at += 4 + len;
  }
}

/**
 * Tasks an agent before this one had received and not handed to the Executor, ready to go
 * through the agent again from its first hop (what they held there is gone with that agent).
 */
export function requeued(tasks: readonly TaskRecord[]): TaskRecord[] {
  return tasks.map((t) => {
    const { slots: _slots, ...rest } = t;
    return { ...rest, state: 'AGENT_STAGING_INPUT_PENDING' };
  });
}

/** The journal's file in the pilot sandbox. */
export const AGENT_JOURNAL = 'agent.journal';

/**
 * The journal of an agent whose pilot may start it again (agent.restarts > 0), else undefined.
 * `restart`: which start this is (0: the first: what a file there says is not this pilot's
 * agents', and is dropped).
 */
export function openAgentJournal(
  sandbox: string,
  restarts: number,
  restart: number,
  now: number,
): { journal: AgentJournal; prior: HeldTasks | undefined } | undefined {
  if (restarts <= 0) return undefined;
  const file = path.join(sandbox, AGENT_JOURNAL);
  if (restart === 0) rmSync(file, { force: true });
  const { journal, prior } = AgentJournal.open(file, now);
  return { journal, prior: restart === 0 ? undefined : prior };
}
