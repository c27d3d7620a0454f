/**
 * SpawnerPool's options and the handlers it calls (spawner-pool.ts).
 */
import { errorMeta } from '../../../errors';
import type { Logger } from '../../../lib/logger';
import type { ExitedEvent, FailedEvent, StartedEvent } from '../effects';
import type { TrackingKind } from './helper/protocol';
import type { SpawnerHelper } from './spawner-command';
import type { PoolLimitsOptions } from './pool-limits';
import type { KeepOptions } from './pool-keep';

/** Receives helper events in bulks (one call per kind per chunk read from a helper). */
export interface SpawnerHandlers {
  started(events: StartedEvent[]): void;
  exited(events: ExitedEvent[]): void;
  failed(events: FailedEvent[]): void;
  /**
   * Helpers keep dying (more than `respawn.max` in `respawn.windowMs`): the pool stops
   * replacing them and fails every later spawn; the pilot cannot run tasks and should end.
   */
  unusable?(message: string): void;
}

/** Calls a handler with a bulk of events of `kind` (if any); one that throws is logged. */
export function callHandler<T>(
  log: Logger,
  kind: string,
  events: T[],
  fn: (events: T[]) => void,
): void {
  if (events.length === 0) return;
  try {
    fn(events);
  } catch (e) {
    log.error('spawner event handler threw', { kind, count: events.length, ...errorMeta(e) });
  }
}

/** How many helper deaths the pool replaces in a window before it gives up. */
export interface RespawnPolicy {
  max: number;
  windowMs: number;
}

export const DEFAULT_RESPAWN: RespawnPolicy = { max: 5, windowMs: 60_000 };

export interface SpawnerPoolOptions {
  /** Number of helper processes. */
  count: number;
  logger: Logger;
  handlers: SpawnerHandlers;
  /** How long start() waits for ready, attach() for each socket and status, status() (10 s). */
  readyTimeoutMs?: number;
  /** After this, close() SIGKILLs helpers that have not exited. */
  closeTimeoutMs?: number;
  /** Replacing helpers that die (default: up to 5 a minute). */
  respawn?: RespawnPolicy;
  /**
   * Variables set in the helpers' environment, over this process's own (which every task
   * inherits); e.g. a test standing in for an agent inside a Slurm job gives the job's.
   */
  env?: Record<string, string>;
  /**
   * Which spawner helper to run. Default: the PILOTFISH_SPAWNER variable if set, else 'native'
   * when dist/native/pf-spawner is built, else 'node'. An explicit 'native' that is not built
   * fails start().
   */
  helper?: SpawnerHelper;
  /**
   * How the helpers keep hold of every process of a task: 'cgroup' (a cgroup per task; start()
   * fails where the machine has none) or 'proc' (sessions, descendants and PF_TASK_MARK, in
   * /proc). Default: the PILOTFISH_TASK_TRACKING variable if set, else 'cgroup' where the
   * machine offers it, else 'proc'.
   */
  tracking?: TrackingKind;
  /**
   * Between the SIGTERM and the SIGKILL of what a task leaves behind when its main process exits
   * (the helpers do it on their own). Default 3000.
   */
  killGraceMs?: number;
  /**
   * For output 'stream' (SpawnSpec.stream): the directory (made 0700 if missing) of the helpers'
   * stream files, one per helper, `spawner.<slot>.<generation>.pfout`: slot 0..count-1, and
   * generation 0 for a slot's first helper, +1 for each that replaces a dead one, so that no
   * helper appends to a file another (perhaps not quite dead) one wrote. One pool per directory:
   * another pool's helpers would take the same names. SpawnerPool.streamFiles() lists them.
   * Unset: helpers start without --stream and fail 'stream' spawns (EINVAL).
   */
  streamDir?: string;
  /** The output caps of 'stream' spawns (streamLimitArgs); unset: none. */
  streamLimits?: StreamLimits;
  /**
   * Passed to every helper as --hold-ms: while a helper has a spawn queued (SpawnSpec.after), it
   * sends its started, exited and failed events at most once per holdMs, in one write, so the
   * agent wakes less often. Default 0: every event goes at the end of the helper's loop turn.
   */
  holdMs?: number;
  /** Where task limits are set (SpawnSpec.limits; pool-limits.ts); default: the machine's. */
  limits?: PoolLimitsOptions;
  /**
   * Keep mode (pool-keep.ts): each helper gets `--keep <dir>/helper-<slot>.sock --keep-ms <ms>`,
   * so that it outlives this process (its tasks run on, their events are held) for `ms` and a
   * new process takes it over with SpawnerPool.attach(); close() ends the helpers with an `end`
   * request. Unset: a helper kills its tasks and exits when this process goes (the default).
   */
  keep?: KeepOptions;
}

/** Output 'stream' limits of a pilot (PilotDescription.agent.outputCapBytes, outputDiskBytes). */
export interface StreamLimits {
  /** A task's cap when it names none. */
  capBytes?: number;
  /** The most all the helpers' stream files take: each its share, rotated at a quarter of it. */
  diskBytes?: number;
}

/**
 * One writer's share of the pilot's stream disk, one of `count` helpers: its stream file moves
 * on to a new part at a quarter of it and keeps its parts within it (none: unbounded).
 */
export function streamShare(
  limits: StreamLimits | undefined,
  count: number,
): { rotateBytes: number; keepBytes: number } | undefined {
  if (limits?.diskBytes === undefined) return undefined;
  const share = Math.max(1, Math.floor(limits.diskBytes / count));
  return { rotateBytes: Math.max(1, Math.floor(share / 4)), keepBytes: share };
}

/** A helper's --stream-* arguments, one of `count` helpers sharing `limits`. */
export function streamLimitArgs(limits: StreamLimits | undefined, count: number): string[] {
  const args: string[] = [];
  if (limits?.capBytes !== undefined) args.push('--stream-cap-bytes', String(limits.capBytes));
  const share = streamShare(limits, count);
  if (share !== undefined) {
    args.push('--stream-rotate-bytes', String(share.rotateBytes));
    args.push('--stream-keep-bytes', String(share.keepBytes));
  }
  return args;
}

/** A 'stream' task's output cap when neither it nor its pilot names one: 64 MiB. */
export const DEFAULT_OUTPUT_CAP_BYTES = 64 * 1024 * 1024;
/** The most disk a pilot's stream files take when it names none: 1 GiB. */
export const DEFAULT_OUTPUT_DISK_BYTES = 1024 * 1024 * 1024;
