import {
  appendFileSync,
  closeSync,
  existsSync,
  openSync,
  readFileSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import type { PilotDescription, PublishedAddresses, TaskDescription } from '../../generated';
import { UsageError } from '../../errors';
import { PRIVATE_FILE } from '../../lib/private-files';
import { errnoOf, StoreUnwritableError } from '../../updater/state-store';
import type { PilotLink } from '../pilots/links';

/** Addresses a session listens on; a resumed session binds the same ones, so agents reconnect. */
export interface SessionAddresses {
  /** The control socket every agent subscribes to (each pilot's own are in its entry). */
  controlDown: string;
}

/** What a resumed session needs and the store does not hold: one JSON object per line. */
export type JournalEntry =
  | { t: 'session'; uid: string; addresses: SessionAddresses; insecure?: true }
  | {
      t: 'pilots';
      mgr: string;
      pilots: {
        uid: string;
        description: PilotDescription;
        cores: number;
        gpus: number;
        sandbox: string;
        link: PilotLink;
      }[];
    }
  | {
      t: 'agent';
      pilot: string;
      /** A local agent's pid, a batch pilot's job id: how a resumed client follows it. */
      pid?: number;
      jobId?: string;
      /** What the agent reported it holds (agent_ready). */
      nodes?: { name: string; cores: number; gpus: number }[];
    }
  | { t: 'pilots-added'; mgr: string; pilots: string[] }
  /**
   * Tasks a manager canceled: a resumed manager cancels again those the store does not hold
   * final (a task's final state in the store retires its cancel).
   */
  | { t: 'cancel'; mgr: string; uids: string[] }
  | { t: 'tasks'; mgr: string; tasks: [uid: string, description: TaskDescription][] }
  /** What `pilotfish run` runs, less its `store` (a MongoDB session keeps its journal there). */
  | { t: 'workload'; workload: Record<string, unknown> }
  /**
   * A resumed MongoDB session that listens elsewhere now, as it told its agents (see
   * resume/addresses.ts): the highest epoch wins over `session`, `pilots` and earlier entries.
   */
  | ({ t: 'addresses' } & PublishedAddresses)
  /**
   * What a model router of the session did (src/router/effects.ts RouterEvent: a replica's
   * start, readiness with its load time, stop, end; a swap), at `ts`: for the profile, the
   * timeline and the status of an ended session.
   */
  | { t: 'router'; ts: number; event: { type: string; model: string } & Record<string, unknown> }
  /** The session was closed (`closed`) or taken up again (`resumed`): the last says which. */
  | { t: 'closed' | 'resumed'; at: number };

/** The public key of every pilot the journal holds (a resumed session admits them first). */
export function journaledKeys(
  entries: readonly JournalEntry[],
): { pilot: string; publicKey: string }[] {
  return entries.flatMap((e) =>
    e.t !== 'pilots'
      ? []
      : e.pilots.flatMap((p) =>
          p.link.publicKey !== undefined ? [{ pilot: p.uid, publicKey: p.link.publicKey }] : [],
        ),
  );
}

/**
 * The session's journal, `<session dir>/journal.jsonl`: written synchronously before the
 * notifications it explains reach the store, so whatever the store holds after a crash, the
 * journal holds too. A torn last line (a crash mid-write) is cut off on reading, and a write
 * that fails (a full disk) is cut back at once, so no torn line is ever followed by others.
 *
 * When the file cannot be written, what the user asks for (a session, pilots, tasks) is
 * refused: `append` throws a StoreUnwritableError and the call that asked fails whole. What
 * happened without asking (an agent's pid and size, `t: 'agent'`, a router's doings), and a cancel, are not refused: each is held
 * and written, in order, before the next entry or at `retry()`; `unwritable` says so meanwhile.
 */
export class Journal {
  private held: JournalEntry[] = [];
  private failure: StoreUnwritableError | undefined;
  /** A failed write left part of a line that a cut did not remove yet: cut before writing. */
  private torn = false;
  private readonly listeners = new Set<(e: StoreUnwritableError | undefined) => void>();
  /** Hears every entry once written to the file, in order (a MongoDB session's mirror). */
  private written: ((entries: readonly JournalEntry[]) => void) | undefined;

  private constructor(
    readonly file: string,
    /** Length of the file's whole lines: a failed write is cut back to it. */
    private size: number,
  ) {}

  static create(dir: string): Journal {
    const file = path.join(dir, 'journal.jsonl');
    closeSync(openSync(file, 'a', PRIVATE_FILE));
    return new Journal(file, statSync(file).size);
  }

  /**
   * Writes a journal from its entries, where the session's directory is gone and its
   * database still holds them (a MongoDB session resumed on another machine).
   */
  static rebuild(dir: string, entries: readonly JournalEntry[]): void {
    const text = entries.map((e) => JSON.stringify(e) + '\n').join('');
    writeFileSync(path.join(dir, 'journal.jsonl'), text, { mode: PRIVATE_FILE, flag: 'wx' });
  }

  /** Hands every entry written from now on to `fn`, in the file's order. */
  mirrorTo(fn: (entries: readonly JournalEntry[]) => void): void {
    this.written = fn;
  }

  /** Reads a session's journal; throws a UsageError naming the file when there is none. */
  static read(dir: string): { journal: Journal; entries: JournalEntry[] } {
    const file = path.join(dir, 'journal.jsonl');
    if (!existsSync(file)) {
      throw new UsageError(`cannot resume: no session journal at '${file}'`);
    }
    const text = readFileSync(file, 'utf8');
    // a crash mid-append leaves a last line without its newline: cut it, it was never used
    const whole = text.lastIndexOf('\n') + 1;
    if (whole < text.length) truncateSync(file, Buffer.byteLength(text.slice(0, whole)));
    const entries: JournalEntry[] = [];
    text
      .slice(0, whole)
      .split('\n')
      .forEach((line, i) => {
        if (line === '') return;
        try {
          entries.push(JSON.parse(line) as JournalEntry);
        } catch (e) {
          throw new UsageError(
            `cannot resume: ${file} line ${i + 1} is not JSON (${(e as Error).message})`,
          );
        }
      });
    return { journal: new Journal(file, Buffer.byteLength(text.slice(0, whole))), entries };
  }

  /** While entries are held because the file cannot be written: the condition. */
  get unwritable(): StoreUnwritableError | undefined {
    return this.held.length > 0 ? this.failure : undefined;
  }

  /** Listens for held entries (the error) and for their being written (undefined). */
  onUnwritable(listener: (e: StoreUnwritableError | undefined) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  append(entry: JournalEntry): void {
    // a cancel is not refused either: it ends work, and a full disk must not keep it running
    const held = entry.t === 'agent' || entry.t === 'cancel' || entry.t === 'router';
    if (this.write([...this.held, entry])) return;
    if (!held) throw this.failure!;
    this.held.push(entry);
    if (this.held.length === 1) this.tell(this.failure);
  }

  /** Writes the held entries, if any; true once none is held. */
  retry(): boolean {
    if (this.held.length === 0) return true;
    return this.write(this.held);
  }

  /** Appends `entries` as one write; on failure the file is cut back and `failure` set. */
  private write(entries: JournalEntry[]): boolean {
    const text = entries.map((e) => JSON.stringify(e) + '\n').join('');
    try {
      if (this.torn) truncateSync(this.file, this.size);
      this.torn = false;
      appendFileSync(this.file, text, { mode: PRIVATE_FILE });
    } catch (e) {
      this.torn = true;
      try {
        truncateSync(this.file, this.size);
        this.torn = false;
      } catch {
        // cut before the next write
      }
      const since = this.failure?.since ?? Date.now();
      this.failure = new StoreUnwritableError(
        { errno: errnoOf(e), path: this.file, since, held: 0 },
        { cause: e },
      );
      return false;
    }
    this.size += Buffer.byteLength(text);
    this.written?.(entries);
    const wasHeld = this.held.length > 0;
    this.held = [];
    this.failure = undefined;
    if (wasHeld) this.tell(undefined);
    return true;
  }

  private tell(e: StoreUnwritableError | undefined): void {
    for (const l of this.listeners) l(e);
  }
}
