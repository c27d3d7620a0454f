import type { PilotDescription, Reason } from '../generated';

/** A pilot as the client sees it. */
export class Pilot {
  state = 'NEW';
  reason?: Reason;
  readonly history: { state: string; inferred: boolean; ts?: number }[] = [];

  constructor(
    readonly uid: string,
    readonly description: PilotDescription,
    /** Cores and GPUs the pilot holds. */
    readonly cores: number,
    readonly gpus: number,
    readonly sandbox: string,
  ) {}

  get final(): boolean {
    return this.state === 'DONE' || this.state === 'FAILED' || this.state === 'CANCELED';
  }
}
