import type { TaskRecord } from '../../generated';
import type { StageEffects } from '../shared/transition';
import type { LaunchFile } from './launch';

export type KillSignal = 'SIGTERM' | 'SIGKILL';

/** One process to start. `env` holds only the overrides; the spawner merges them over its own. */
export interface SpawnSpec {
  uid: string;
  executable: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  stdoutPath: string;
  stderrPath: string;
  /** Small files to write before the process starts (e.g. mpirun's hostfile). */
  files?: LaunchFile[];
  /** 'process': kills signal this process alone, not its group and session (srun). */
  killScope?: 'process';
}

export interface StartedEvent {
  uid: string;
  pid: number;
}

export interface ExitedEvent {
  uid: string;
  exitCode: number | null;
  signal: string | null;
}

/** The process never ran (or its spawner was lost): `code` is an errno name or E_SPAWNER_DIED. */
export interface FailedEvent {
  uid: string;
  code: string;
  message: string;
}

/**
 * What ExecutorCore may ask for. All fire-and-forget: the outcome of spawn and kill comes back
 * later as onStarted / onExited / onSpawnFailed events.
 */
export interface ExecutorEffects extends StageEffects {
  spawn(spec: SpawnSpec): void;
  /** Signals the task's whole process group; a uid with no live process is ignored. */
  kill(uid: string, signal: KillSignal): void;
  /** Gives the tasks' slots back to the AgentScheduler. Called exactly once per task. */
  release(tasks: TaskRecord[]): void;
}
