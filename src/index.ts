/** pilotfish: the public client API. */
export { Session, type SessionOptions } from './client/session';
export { PilotManager, type PilotManagerOptions } from './client/pilot-manager';
export { TaskManager } from './client/task-manager';
export { Task, type StateInfo, type TaskHistoryEntry, type OutputMode } from './client/task';
export {
  functionModule,
  type FunctionModule,
  type FunctionModuleOptions,
  type FunctionHandle,
  type FunctionCallOptions,
  type FunctionExports,
  type CallArgs,
  type CallResult,
  type CallSettled,
  type UntypedModule,
} from './client/function-handle';
export type { TransferProgress, TransferListener } from './client/files/transfer-progress';
export type { Explanation, WaitReason } from './client/tasks/explain';
export { Pilot, type AgentStartup } from './client/pilot';
export type {
  TaskDescription,
  PilotDescription,
  PilotLiveness,
  Reason,
  SilentPart,
  StagingDirective,
} from './generated';
export type { Logger } from './lib/logger';
export {
  TASK_STATES,
  FINAL_TASK_STATES,
  isFinalTaskState,
  type TaskState,
  type FinalTaskState,
} from './states/task-model';
export {
  PILOT_STATES,
  FINAL_PILOT_STATES,
  isFinalPilotState,
  type PilotState,
  type FinalPilotState,
} from './states/pilot-model';
export {
  PilotfishError,
  ValidationError,
  TimeoutError,
  UsageError,
  PilotError,
  OutputUnavailableError,
  FunctionCallError,
  type ValidationIssue,
} from './errors';
export type { TailOptions, OutputStream } from './client/tasks/output';
export {
  StoreUnreachableError,
  StoreUnwritableError,
  type StoreCondition,
  type StoreUnreachable,
  type StoreUnwritable,
} from './updater/state-store';
export { readProfile } from './profile/read';
export {
  utilization,
  BUCKETS,
  type Bucket,
  type Account,
  type PilotUtilization,
  type UtilizationReport,
} from './profile/utilization';
export { renderTimeline } from './profile/timeline';
export type {
  Profile,
  PilotProfile,
  TaskProfile,
  AttemptProfile,
  SlotProfile,
  PilotNode,
  Stamp,
} from './profile/types';
export type { ModelProfile, ReplicaProfile } from './profile/models';
export { startRouter, type ModelRouter, type RouterOptions } from './router/router';
export type { RouterSnapshot, ReplicaState } from './router/core';
export type {
  RouterConfig,
  RouterModel,
  RouterGroup,
  RouterStatus,
  RouterModelStatus,
  ReplicaStatus,
  Labels,
} from './generated';
export type { NodeLabels } from './components/shared/node-labels';
