import type { TaskDescription, TaskRecord } from '../../generated';
import { normalPath } from '../../transport/file-paths';

/**
 * What `TaskManager.onTransfer` listeners get about one `transfer` directive of a task: its
 * first event ('start', once the client file is open), 'progress' at most every ~250 ms, and
 * a last one, 'done' or 'failed'. A transfer that fails to open (its client file missing, say)
 * has one event only, 'failed'.
 */
export interface TransferProgress {
  task: string;
  attempt: number;
  pilot: string;
  /** 'in': client to pilot (an inputStaging directive); 'out': pilot to client (outputStaging). */
  direction: 'in' | 'out';
  /** The directive's index in the description's inputStaging ('in') or outputStaging ('out'). */
  index: number;
  /** The directive's source and target, as the description has them. */
  source: string;
  target: string;
  phase: 'start' | 'progress' | 'done' | 'failed';
  bytesDone: number;
  /** The file's size (0 when the transfer failed before it was known). */
  bytesTotal: number;
  /** Why it failed ('failed' only): an errno name or E_TRANSFER, and a message naming the file. */
  error?: { code: string; message: string };
}

export type TransferListener = (progress: TransferProgress) => void;

/** What a task's transfers are reported as: its attempt, its directives as written and resolved. */
export interface TransferSubject {
  attempt: number;
  description: Pick<TaskDescription, 'inputStaging' | 'outputStaging'>;
  staging?: TaskRecord['staging'];
}

export type Direction = TransferProgress['direction'];

/** The least time between two 'progress' events of one transfer. */
export const PROGRESS_EVERY_MS = 250;

interface Directive {
  index: number;
  source: string;
  target: string;
  /** The client end, in the normal form requests name it. */
  path: string;
  /** A transfer has named this directive already (a path may be in several). */
  claimed: boolean;
}

interface Granted {
  attempt: number;
  in: Directive[];
  out: Directive[];
}

interface Open {
  event: Omit<TransferProgress, 'phase' | 'bytesDone' | 'error'>;
  bytesDone: number;
  lastAt: number;
}

/**
 * The client's account of transfers under way, from what its file server sees: which
 * directive of which attempt a request is for (each task's transfer directives, given when its
 * grant is), how far each transfer is, and when to tell (the first and last event of each,
 * between them at most one per `everyMs`). Pure: the caller passes the time in and delivers
 * the events it returns. Holds the directives of tasks with grants and one entry per open
 * transfer, nothing per chunk.
 */
export class TransferTracker {
  private readonly granted = new Map<string, Granted>();
  private readonly open = new Map<string, Open>();

  constructor(private readonly everyMs: number = PROGRESS_EVERY_MS) {}

  /** `task` on `pilot` was granted its transfers for this attempt (a new attempt starts afresh). */
  expect(pilot: string, task: string, subject: TransferSubject): void {
    const { inputStaging = [], outputStaging = [] } = subject.description;
    const pick = (
      resolved: readonly { source: string; target: string; action?: string }[] | undefined,
      written: readonly { source: string; target: string }[],
      clientEnd: 'source' | 'target',
    ): Directive[] =>
      (resolved ?? []).flatMap((d, index) =>
        d.action === 'transfer' && written[index] !== undefined
          ? [{ index, ...pickEnds(written[index]), path: normalPath(d[clientEnd]), claimed: false }]
          : [],
      );
    this.granted.set(grantKey(pilot, task), {
      attempt: subject.attempt,
      in: pick(subject.staging?.input, inputStaging, 'source'),
      out: pick(subject.staging?.output, outputStaging, 'target'),
    });
  }

  /** `task` on `pilot` holds no grant any more (its open transfers end through `failed`). */
  forget(pilot: string, task: string): void {
    this.granted.delete(grantKey(pilot, task));
  }

  /**
   * Transfer `key` opened the client file `path` for `task`: its 'start' event, or undefined if
   * no directive of the task's grant names it (nothing is told of such a transfer).
   */
  opened(
    key: string,
    at: { pilot: string; task: string; now: number },
    direction: Direction,
    path: string,
    bytesTotal: number,
  ): TransferProgress | undefined {
    const event = this.claim(at.pilot, at.task, direction, path, bytesTotal);
    if (event === undefined) return undefined;
    this.open.set(key, { event, bytesDone: 0, lastAt: at.now });
    return { ...event, phase: 'start', bytesDone: 0 };
  }

  /** Opening `path` failed: the transfer's only event, 'failed'. */
  openFailed(
    at: { pilot: string; task: string },
    direction: Direction,
    path: string,
    error: { code: string; message: string },
  ): TransferProgress | undefined {
    const event = this.claim(at.pilot, at.task, direction, path, 0);
    return event === undefined ? undefined : { ...event, phase: 'failed', bytesDone: 0, error };
  }

  /** Transfer `key` has `bytesDone` bytes through: a 'progress' event if one is due. */
  advanced(key: string, bytesDone: number, now: number): TransferProgress | undefined {
    const o = this.open.get(key);
    if (o === undefined) return undefined;
    o.bytesDone = bytesDone;
    // the last chunk is told by the end's event, so the bytes told only ever rise
    if (bytesDone >= o.event.bytesTotal || now - o.lastAt < this.everyMs) return undefined;
    o.lastAt = now;
    return { ...o.event, phase: 'progress', bytesDone };
  }

  /** Transfer `key` ended, checked: its 'done' event. */
  ended(key: string): TransferProgress | undefined {
    const o = this.take(key);
    return o === undefined ? undefined : { ...o.event, phase: 'done', bytesDone: o.bytesDone };
  }

  /** Transfer `key` failed or was dropped: its 'failed' event, if it was open. */
  failed(key: string, error: { code: string; message: string }): TransferProgress | undefined {
    const o = this.take(key);
    if (o === undefined) return undefined;
    return { ...o.event, phase: 'failed', bytesDone: o.bytesDone, error };
  }

  /** Keys of the transfers open now. */
  keys(): string[] {
    return [...this.open.keys()];
  }

  private take(key: string): Open | undefined {
    const o = this.open.get(key);
    this.open.delete(key);
    return o;
  }

  /** The directive a transfer of `path` is for: the first of its path not yet claimed. */
  private claim(
    pilot: string,
    task: string,
    direction: Direction,
    path: string,
    bytesTotal: number,
  ): Open['event'] | undefined {
    const g = this.granted.get(grantKey(pilot, task));
    if (g === undefined) return undefined;
    let found: Directive | undefined;
    for (const d of g[direction]) {
      if (d.path !== path) continue;
      found = d;
      if (!d.claimed) break;
    }
    if (found === undefined) return undefined;
    found.claimed = true;
    const { index, source, target } = found;
    return { task, attempt: g.attempt, pilot, direction, index, source, target, bytesTotal };
  }
}

function grantKey(pilot: string, task: string): string {
  return `${pilot}\0${task}`;
}

function pickEnds(d: { source: string; target: string }): { source: string; target: string } {
  return { source: d.source, target: d.target };
}
