export type { ExecutorKind, Prepared, StartFailure, TaskMode } from './kind';
export { processKind } from './process';
export { EXECUTOR_KINDS, kindFor } from './registry';
