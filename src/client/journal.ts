import {
  appendFileSync,
  closeSync,
  existsSync,
  openSync,
  readFileSync,
  truncateSync,
} from 'node:fs';
import * as path from 'node:path';
import type { PilotDescription, TaskDescription } from '../generated';
import { UsageError } from '../errors';
import { PRIVATE_FILE } from '../lib/private-files';
import type { PilotLink } from './pilot-links';

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
  | { t: 'tasks'; mgr: string; tasks: [uid: string, description: TaskDescription][] };

/**
 * The session's journal, `<session dir>/journal.jsonl`: written synchronously before the
 * notifications it explains reach the store, so whatever the store holds after a crash, the
 * journal holds too. A torn last line (a crash mid-write) is cut off on reading.
 */
export class Journal {
  private constructor(readonly file: string) {}

  static create(dir: string): Journal {
    const file = path.join(dir, 'journal.jsonl');
    closeSync(openSync(file, 'a', PRIVATE_FILE));
    return new Journal(file);
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
    return { journal: new Journal(file), entries };
  }

  append(entry: JournalEntry): void {
    appendFileSync(this.file, JSON.stringify(entry) + '\n', { mode: PRIVATE_FILE });
  }
}
