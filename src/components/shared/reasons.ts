import type { Reason } from '../../generated';
import type { ReasonCode } from '../../states/reason-codes';

/** A reason; `code` must be in the catalogue (src/states/reason-codes.ts), or it fails to compile. */
export function reason(
  code: ReasonCode,
  message: string,
  component: string,
  detail?: Record<string, unknown>,
): Reason {
  return detail === undefined ? { code, message, component } : { code, message, component, detail };
}

/** Uids canceled before their task arrived, so the next holder cancels it on receipt. */
export class CancelSet {
  private readonly uids = new Set<string>();
  add(uids: readonly string[]): void {
    for (const u of uids) this.uids.add(u);
  }
  has(uid: string): boolean {
    return this.uids.has(uid);
  }
  /** The tasks have ended: their cancels can no longer apply. */
  forget(finals: readonly { uid: string }[]): void {
    for (const f of finals) this.uids.delete(f.uid);
  }
}
