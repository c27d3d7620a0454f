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
  SpawnerPool,
  spawnerScript,
  type SpawnerHandlers,
  type SpawnerPoolOptions,
} from './spawner-pool';
