import type { PilotDescription, Reason } from '../../generated';

/** A pilot as the client's components hold it. */
export interface PilotRecord {
  uid: string;
  state: string;
  session: string;
  description: PilotDescription;
  /** Cores and GPUs the pilot holds (resolved from the description and the resource). */
  cores: number;
  gpus: number;
  sandbox: string;
  reason?: Reason;
}
