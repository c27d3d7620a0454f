export { ExecutorCore, type ExecutorOptions, type ShutdownState } from './core';
export type {
  ExecutorEffects,
  ExitedEvent,
  FailedEvent,
  KillSignal,
  SpawnSpec,
  StartedEvent,
} from './effects';
export {
  buildLaunch,
  launchMethodOf,
  type BuildLaunchOptions,
  type Launch,
  type LaunchFile,
  type LaunchMethod,
  type LaunchOptions,
  type LaunchResult,
  type SlurmLaunchOptions,
} from './launch';
export {
  SpawnerPool,
  spawnerScript,
  type SpawnerHandlers,
  type SpawnerPoolOptions,
} from './spawner-pool';
