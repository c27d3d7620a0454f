/* Generated from schemas/task-state.schema.json by scripts/gen-types.js: do not edit. */

/**
 * A state of the task model, in model order (docs/state-model.md).
 */
export type TaskState =
  | 'NEW'
  | 'TMGR_SCHEDULING_PENDING'
  | 'TMGR_SCHEDULING'
  | 'TMGR_STAGING_INPUT_PENDING'
  | 'TMGR_STAGING_INPUT'
  | 'AGENT_STAGING_INPUT_PENDING'
  | 'AGENT_STAGING_INPUT'
  | 'AGENT_SCHEDULING_PENDING'
  | 'AGENT_SCHEDULING'
  | 'AGENT_EXECUTING_PENDING'
  | 'AGENT_EXECUTING'
  | 'AGENT_STAGING_OUTPUT_PENDING'
  | 'AGENT_STAGING_OUTPUT'
  | 'TMGR_STAGING_OUTPUT_PENDING'
  | 'TMGR_STAGING_OUTPUT'
  | 'DONE'
  | 'FAILED'
  | 'CANCELED';
