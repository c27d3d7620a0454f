import type { Reason, TaskDescription } from '../generated';
import { ownCopy, type Interner } from '../lib/strings';
import { TASK_STATES, isFinalTaskState, type TaskState } from '../states/task-model';

/** What a state callback gets besides the task and the state. */
export interface StateInfo {
  attempt: number;
  /** True when the state was implied by a later notification rather than notified itself. */
  inferred: boolean;
  reason?: Reason;
  /** When the owning component made the transition (absent when inferred). */
  ts?: number;
}

/** One delivered state of a task. */
export interface TaskHistoryEntry {
  state: TaskState;
  attempt: number;
  inferred: boolean;
  /** When the owning component made the transition (absent when inferred). */
  ts?: number;
}

const STATE_CODE = new Map<TaskState, number>(TASK_STATES.map((s, i) => [s, i]));
/** An entry's code: state index in the low 5 bits, inferred in bit 5, the attempt above. */
const INFERRED = 32;
const ATTEMPT = 64;
/** Codes below this, with an integer ts in [0, 2^42) ms, pack into one number: ts * CODES + code. */
const CODES = 2048;
const FIRST_FINAL = STATE_CODE.get('DONE')!;
const MAX_PACKED_TS = 2 ** 42;

/** The first byte of an entry's ts in the compact form: its low 2 bits say which way it moved. */
const TS_NONE = 0;
const TS_UP = 1;
const TS_DOWN = 2;
/** Bytes per String.fromCharCode call (a call's arguments go on the stack). */
const CHUNK = 4096;

/**
 * Appends an entry to a live trail: one number (ts * CODES + code) when it packs, else two
 * (-1 - code, then ts, NaN when absent).
 */
function pushEntry(trail: number[], code: number, ts: number): void {
  if (code < CODES && Number.isInteger(ts) && ts >= 0 && ts < MAX_PACKED_TS) {
    trail.push(ts * CODES + code);
  } else {
    trail.push(-1 - code, ts);
  }
}

/**
 * Calls `fn(code, ts)` for each entry of a trail in either form (ts is NaN when absent) until
 * `fn` returns false; returns false when it did.
 */
function eachEntry(trail: number[] | string, fn: (code: number, ts: number) => boolean): boolean {
  if (typeof trail === 'string') {
    let i = 0;
    let prev = 0;
    // a varint, low 7 bits first (exact: every value written is a safe integer)
    const varint = (): number => {
      let v = 0;
      let scale = 1;
      let b: number;
      do {
        b = trail.charCodeAt(i++);
        v += (b & 127) * scale;
        scale *= 128;
      } while (b >= 128);
      return v;
    };
    while (i < trail.length) {
      const code = varint();
      const b = trail.charCodeAt(i++);
      const sign = b & 3;
      let ts = NaN;
      if (sign !== TS_NONE) {
        const step = ((b >> 2) & 31) + (b >= 128 ? 32 * varint() : 0);
        ts = prev = sign === TS_UP ? prev + step : prev - step;
      }
      if (!fn(code, ts)) return false;
    }
    return true;
  }
  for (let i = 0; i < trail.length; i++) {
    const v = trail[i]!;
    let code: number;
    let ts: number;
    if (v < 0) {
      code = -1 - v;
      ts = trail[++i]!;
    } else {
      code = v % CODES;
      ts = (v - code) / CODES;
    }
    if (!fn(code, ts)) return false;
  }
  return true;
}

/**
 * A final trail as a one-byte string (V8 keeps it at one byte per char plus a 16-byte header),
 * or undefined when an entry would not come back exactly (a code or ts that is not a safe
 * non-negative integer, or -0): such a task keeps its array. Per entry: the code as a varint
 * (low 7 bits first, bit 7 = more); then the ts as its step from the previous entry's ts (from
 * 0 for the first; clocks of different components may step back): one byte with the direction
 * in bits 0-1 (TS_NONE: no ts, and nothing follows), the step's low 5 bits in bits 2-6 and bit
 * 7 = more, then the rest of the step as a varint. A 16-state history takes about 60 bytes.
 */
function compact(trail: number[]): string | undefined {
  const bytes: number[] = [];
  const varint = (v: number): void => {
    // exact for any safe integer: / 128 and % 128 do not round (no 32-bit bit operations)
    for (; v >= 128; v = Math.floor(v / 128)) bytes.push((v % 128) + 128);
    bytes.push(v);
  };
  let prev = 0;
  const exact = eachEntry(trail, (code, ts) => {
    if (!Number.isSafeInteger(code) || code < 0) return false;
    varint(code);
    if (Number.isNaN(ts)) {
      bytes.push(TS_NONE);
      return true;
    }
    if (!Number.isSafeInteger(ts) || ts < 0 || Object.is(ts, -0)) return false;
    const step = Math.abs(ts - prev); // exact: both lie in [0, 2^53)
    const sign = ts >= prev ? TS_UP : TS_DOWN;
    prev = ts;
    if (step < 32) {
      bytes.push(step * 4 + sign);
    } else {
      bytes.push((step % 32) * 4 + sign + 128);
      varint(Math.floor(step / 32));
    }
    return true;
  });
  if (!exact) return undefined;
  if (bytes.length <= CHUNK) return String.fromCharCode(...bytes);
  let out = '';
  for (let i = 0; i < bytes.length; i += CHUNK) {
    out += String.fromCharCode(...bytes.slice(i, i + CHUNK));
  }
  return out;
}

/** Where a task's output goes: files in its sandbox, or its pilot's stream files. */
export type OutputMode = 'files' | 'stream';

/** A task as the client sees it: updated as its states are delivered, in model order. */
export class Task {
  state: TaskState = 'NEW';
  attempt = 1;
  /** Its place in the session's submission order (TaskRegistry). */
  seq = 0;
  /** Retries it has used (see `retries` in its description). */
  retried = 0;
  /** The uid of the pilot the task was bound to (its latest attempt's). */
  pilot?: string;
  /** The node its latest attempt runs on (its first rank's), once it executes. */
  node?: string;
  /** The exit code of its latest attempt's process (null when a signal ended it). */
  exitCode?: number | null;
  /** The signal that ended its latest attempt's process, e.g. 'SIGKILL' (else null). */
  signal?: string | null;
  /**
   * A tail: the last 2,048 bytes of the latest attempt's stdout, cut at a line start, set once
   * it has run. All of it: `tmgr.tail(uid)`, or with output 'files' `${task.sandbox}/stdout`
   * (docs/output.md).
   */
  stdout?: string;
  /** A tail of stderr, as `stdout`. */
  stderr?: string;
  /**
   * Bytes of the latest attempt's stdout and stderr that its output cap (outputCapBytes)
   * dropped, counted at its exit; its output keeps the first and last parts around a line
   * `[pilotfish: N bytes dropped]`. Undefined when nothing was dropped.
   */
  outputDropped?: number;
  /**
   * A warning: some of the latest attempt's streamed output could not be written (a full
   * disk, a quota), naming the stream file and the error. Its state is its exit's.
   */
  outputLost?: string;
  /**
   * Where its output goes (undefined until known, and for a function call): 'files', `stdout`
   * and `stderr` in its sandbox; 'stream' (the default), framed into its pilot's stream files
   * (`tmgr.tail` reads both). Set from the notification detail that says it (`detail.output`),
   * which comes with the task's sandbox, once its agent has staged it.
   */
  output?: OutputMode;
  /** mode 'function': the value the function returned (DONE). */
  result?: unknown;
  /** mode 'service': where an attempt of it became ready (see `endpoint`). */
  private served: { attempt: number; endpoint: string } | undefined;
  reason?: Reason;
  /**
   * The delivered states, one number each (ts * CODES + code); an entry that does not pack
   * (no ts, a fractional one, a large attempt) takes two: -1 - code, then ts or NaN. As objects,
   * the 1.6 million entries of 100,000 tasks would cost the client about 100 MB. Once the task
   * is final the trail is a string instead (see compact()): about 70 bytes for 17 entries
   * against about 220 as an array.
   */
  private trail: number[] | string = [];
  /** The sandbox is `${sandboxDir}/${uid}` (a directory all tasks of a pilot share) ... */
  private sandboxDir: string | undefined;
  /** ... or this path, when it is laid out otherwise. */
  private sandboxPath: string | undefined;

  constructor(
    readonly uid: string,
    readonly description: TaskDescription,
  ) {}

  /** The task's sandbox directory, once an agent has made it. */
  get sandbox(): string | undefined {
    return (
      this.sandboxPath ??
      (this.sandboxDir === undefined ? undefined : `${this.sandboxDir}/${this.uid}`)
    );
  }

  /**
   * Sets the sandbox; `dirs` shares one copy of each pilot's directory among its tasks.
   * @internal
   */
  setSandbox(path: string, dirs: Interner): void {
    const dir = path.slice(0, -this.uid.length - 1);
    if (path.length > this.uid.length && path === `${dir}/${this.uid}`) {
      this.sandboxDir = dirs.get(dir);
      this.sandboxPath = undefined;
    } else {
      // one copy for all the tasks that ran in their pilot's sandbox (function calls)
      this.sandboxPath = dirs.get(path);
      this.sandboxDir = undefined;
    }
  }

  /**
   * mode 'service': `host:port` where it serves, once its current attempt is ready (kept after
   * it ends, as where it served); undefined before.
   */
  get endpoint(): string | undefined {
    return this.served?.attempt === this.attempt ? this.served.endpoint : undefined;
  }

  /**
   * The TaskManager calls this when an attempt of the service reports ready.
   * @internal
   */
  setReady(attempt: number, endpoint: string): void {
    if (this.served === undefined || this.served.attempt <= attempt) {
      this.served = { attempt, endpoint: ownCopy(endpoint) };
    }
  }

  get final(): boolean {
    return isFinalTaskState(this.state);
  }

  /** Every delivered state in delivery order (model order per attempt): a new array per read. */
  get history(): TaskHistoryEntry[] {
    const out: TaskHistoryEntry[] = [];
    eachEntry(this.trail, (code, ts) => {
      const entry: TaskHistoryEntry = {
        state: TASK_STATES[code % INFERRED]!,
        attempt: Math.floor(code / ATTEMPT),
        inferred: (code & INFERRED) !== 0,
      };
      if (!Number.isNaN(ts)) entry.ts = ts;
      out.push(entry);
      return true;
    });
    return out;
  }

  /**
   * Appends a delivered state (the TaskManager calls this as it delivers).
   * @internal
   */
  record(state: TaskState, attempt: number, inferred: boolean, ts: number | undefined): void {
    const index = STATE_CODE.get(state);
    if (index === undefined) throw new RangeError(`not a task state: ${state}`);
    const code = index + (inferred ? INFERRED : 0) + attempt * ATTEMPT;
    let trail = this.trail;
    if (typeof trail === 'string') {
      // a state after a final one (the TaskManager sends none): back to an array, and on
      const live: number[] = [];
      eachEntry(trail, (c, t) => {
        pushEntry(live, c, t);
        return true;
      });
      trail = live;
    }
    pushEntry(trail, code, ts ?? NaN);
    // a grown array keeps spare room (about 45 slots for 16 states): a final task's goes
    this.trail = index >= FIRST_FINAL ? (compact(trail) ?? trail.slice()) : trail;
  }
}
