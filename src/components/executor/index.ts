export {
  ExecutorCore,
  SIGNALED_EXIT_GRACE_MS,
  type ExecutorOptions,
  type ShutdownState,
} from './core';
export type {
  ExecutorEffects,
  ExecutorJob,
  ExitedEvent,
  FailedEvent,
  FileSpawnSpec,
  KillSignal,
  ProcessJob,
  SpawnSpec,
  StartedDetail,
  StartedEvent,
  StopHow,
  StreamSpawnSpec,
} from './effects';
export {
  EXECUTOR_KINDS,
  kindFor,
  processKind,
  type ExecutorKind,
  type Prepared,
  type StartFailure,
  type TaskMode,
} from './kinds';
export {
  LAUNCH_METHODS,
  buildLaunch,
  launchMethodOf,
  launchOptionsFor,
  type BuildLaunchOptions,
  type Launch,
  type LaunchEnvironment,
  type LaunchFile,
  type LaunchMethod,
  type LaunchMethodPlugin,
  type LaunchOptions,
  type LaunchResult,
  type AgentNode,
  type SrunOptions,
} from './launch';
export { ExecutorShell, type ExecutorShellOptions } from './shell';
export {
  SpawnerPool,
  spawnerScript,
  type SpawnerHandlers,
  type SpawnerPoolOptions,
} from './process/spawner-pool';
