/* Generated from schemas/pilot-state.schema.json by scripts/gen-types.js: do not edit. */

/**
 * A state of the pilot model, in model order (docs/state-model.md).
 */
export type PilotState =
  | 'NEW'
  | 'PMGR_LAUNCHING_PENDING'
  | 'PMGR_LAUNCHING'
  | 'PMGR_ACTIVE_PENDING'
  | 'PMGR_ACTIVE'
  | 'DONE'
  | 'FAILED'
  | 'CANCELED';
