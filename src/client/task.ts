import type { Reason, TaskDescription } from '../generated';

/** What a state callback gets besides the task and the state. */
export interface StateInfo {
  attempt: number;
  /** True when the state was implied by a later notification rather than notified itself. */
  inferred: boolean;
  reason?: Reason;
  /** When the owning component made the transition (absent when inferred). */
  ts?: number;
}

/** A task as the client sees it: updated as its states are delivered, in model order. */
export class Task {
  state = 'NEW';
  attempt = 1;
  pilot?: string;
  sandbox?: string;
  exitCode?: number | null;
  signal?: string | null;
  stdout?: string;
  stderr?: string;
  reason?: Reason;
  readonly history: { state: string; attempt: number; inferred: boolean; ts?: number }[] = [];

  constructor(
    readonly uid: string,
    readonly description: TaskDescription,
  ) {}

  get final(): boolean {
    return this.state === 'DONE' || this.state === 'FAILED' || this.state === 'CANCELED';
  }
}
