import type { Reason, TaskDescription } from '../generated';
import type { Interner } from '../lib/strings';
import { ownCopy } from '../lib/strings';
import { TASK_STATES } from '../states/task-model';

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
  state: string;
  attempt: number;
  inferred: boolean;
  /** When the owning component made the transition (absent when inferred). */
  ts?: number;
}

const STATE_CODE = new Map<string, number>(TASK_STATES.map((s, i) => [s, i]));
/** An entry's code: state index in the low 5 bits, inferred in bit 5, the attempt above. */
const INFERRED = 32;
const ATTEMPT = 64;
/** Codes below this, with an integer ts in [0, 2^42) ms, pack into one number: ts * CODES + code. */
const CODES = 2048;
const FIRST_FINAL = STATE_CODE.get('DONE')!;
const MAX_PACKED_TS = 2 ** 42;

/** A task as the client sees it: updated as its states are delivered, in model order. */
export class Task {
  state = 'NEW';
  attempt = 1;
  pilot?: string;
  exitCode?: number | null;
  signal?: string | null;
  stdout?: string;
  stderr?: string;
  reason?: Reason;
  /**
   * The delivered states, one number each (ts * CODES + code); an entry that does not pack
   * (no ts, a fractional one, a large attempt) takes two: -1 - code, then ts or NaN. As objects,
   * the 1.6 million entries of 100,000 tasks would cost the client about 100 MB.
   */
  private trail: number[] = [];
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

  /** Sets the sandbox; `dirs` shares one copy of each pilot's directory among its tasks. */
  setSandbox(path: string, dirs: Interner): void {
    const dir = path.slice(0, -this.uid.length - 1);
    if (path.length > this.uid.length && path === `${dir}/${this.uid}`) {
      this.sandboxDir = dirs.get(dir);
      this.sandboxPath = undefined;
    } else {
      this.sandboxPath = ownCopy(path);
      this.sandboxDir = undefined;
    }
  }

  get final(): boolean {
    return this.state === 'DONE' || this.state === 'FAILED' || this.state === 'CANCELED';
  }

  /** Every delivered state in delivery order (model order per attempt): a new array per read. */
  get history(): TaskHistoryEntry[] {
    const out: TaskHistoryEntry[] = [];
    for (let i = 0; i < this.trail.length; i++) {
      const v = this.trail[i]!;
      let code: number;
      let ts: number;
      if (v < 0) {
        code = -1 - v;
        ts = this.trail[++i]!;
      } else {
        code = v % CODES;
        ts = (v - code) / CODES;
      }
      const entry: TaskHistoryEntry = {
        state: TASK_STATES[code % INFERRED]!,
        attempt: Math.floor(code / ATTEMPT),
        inferred: (code & INFERRED) !== 0,
      };
      if (!Number.isNaN(ts)) entry.ts = ts;
      out.push(entry);
    }
    return out;
  }

  /** Appends a delivered state (the TaskManager calls this as it delivers). */
  record(state: string, attempt: number, inferred: boolean, ts: number | undefined): void {
    const index = STATE_CODE.get(state);
    if (index === undefined) throw new RangeError(`not a task state: ${state}`);
    const code = index + (inferred ? INFERRED : 0) + attempt * ATTEMPT;
    if (code < CODES && ts !== undefined && Number.isInteger(ts) && ts >= 0 && ts < MAX_PACKED_TS) {
      this.trail.push(ts * CODES + code);
    } else {
      this.trail.push(-1 - code, ts ?? NaN);
    }
    // a grown array keeps spare room (about 45 slots for 16 states): a final task's is trimmed
    if (index >= FIRST_FINAL) this.trail = this.trail.slice();
  }
}
