/**
 * Small numbers for the strings notifications repeat most: their kind, state and component
 * (the tuple encoding of src/updater/notification-codec.ts, and `detail.passed`).
 *
 * The tables are append-only: a code, once written to a file, must keep its meaning. So they
 * are listed here, not derived from the state models (a test checks they cover them).
 */
export const KIND_CODES: readonly string[] = ['task', 'pilot', 'service'];

export const STATE_CODES: readonly string[] = [
  'NEW',
  'TMGR_SCHEDULING_PENDING',
  'TMGR_SCHEDULING',
  'TMGR_STAGING_INPUT_PENDING',
  'TMGR_STAGING_INPUT',
  'AGENT_STAGING_INPUT_PENDING',
  'AGENT_STAGING_INPUT',
  'AGENT_SCHEDULING_PENDING',
  'AGENT_SCHEDULING',
  'AGENT_EXECUTING_PENDING',
  'AGENT_EXECUTING',
  'AGENT_STAGING_OUTPUT_PENDING',
  'AGENT_STAGING_OUTPUT',
  'TMGR_STAGING_OUTPUT_PENDING',
  'TMGR_STAGING_OUTPUT',
  'DONE',
  'FAILED',
  'CANCELED',
  'PMGR_LAUNCHING_PENDING',
  'PMGR_LAUNCHING',
  'PMGR_ACTIVE_PENDING',
  'PMGR_ACTIVE',
  'SERVICE_READY',
];

export const COMPONENT_CODES: readonly string[] = [
  'TaskManager',
  'ManagerScheduler',
  'ManagerInputStager',
  'AgentInputStager',
  'AgentScheduler',
  'Executor',
  'AgentOutputStager',
  'ManagerOutputStager',
  'PilotManager',
  'PilotLauncher',
];
