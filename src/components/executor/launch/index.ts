export type {
  BuildLaunchOptions,
  Launch,
  LaunchFile,
  LaunchInput,
  LaunchMethod,
  LaunchMethodPlugin,
  LaunchOptions,
  LaunchResult,
  AgentNode,
  SrunOptions,
  Slot,
  TaskLimitDefaults,
} from './method';
export { needsLauncher } from './launcher-need';
export { MPI_AUTO, checkedMpi, chooseMpi, type MpiChoice, type MpiFacts } from './mpi';
export { MPI_HOSTFILE, RANK_WRAPPER, RANK_WRAPPERS } from './mpirun';
export { launchOptionsFor, type AllocationLaunchOptions, type LaunchEnvironment } from './options';
export { cpuList, slotCpus } from './ranks';
export { LAUNCH_METHODS, buildLaunch, launchMethodOf } from './registry';
export { SLURM_HOSTFILE, SRUN_GRES_RANK_WRAPPER, SRUN_RANK_WRAPPER } from './srun';
export {
  STEPS_SCRIPT,
  STEP_STATUS_FILE,
  parseStepStatus,
  stepStatusPrefix,
  stepsReason,
  taskSteps,
  type StepFailure,
  type StepName,
  type TaskSteps,
} from './steps';
