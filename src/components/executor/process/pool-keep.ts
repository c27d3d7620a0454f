/**
 * SpawnerPool's keep mode (SpawnerPoolOptions.keep, opt-in), its pure parts: the helpers'
 * sockets and arguments, the merged status of its helpers, and the stream file generations a
 * pool that re-attached goes on from. No I/O: spawner-pool.ts does it.
 *
 * The helpers outlive the pool's process: one that loses its master (the agent died, even by
 * SIGKILL) keeps its tasks running and holds their events for keep.ms, listening on
 * `<keep.dir>/helper-<slot>.sock` (helper/protocol.ts). SpawnerPool.attach() in a new process
 * connects to them, gets the held events through its handlers (so a task that ended meanwhile is
 * reported once, to the new pool), owns the tasks they run and then works as a started pool;
 * status() tells what runs and what ended lately, to reconcile with (events the dead master read
 * and never passed on are among them). close() of a keep pool ends its helpers with an `end`
 * request: the end of their stdin no longer does. An attached pool does not own its helpers as
 * children: a closed socket is a helper's death, and what a dead one left is found through /proc
 * (its marks) whatever it tracked by; the replacements it starts and the task limits it sets are
 * its own (pool-tracking.ts, pool-limits.ts), as a started pool's are.
 */
import { UsageError } from '../../../errors';
import type { ExitedEvent, FailedEvent } from '../effects';
import { exitedOf } from './helper-exit';
import type { HelperStatus } from './helper/protocol';

/** Keep mode: helpers that outlive the pool's process, and a later pool re-attaches to. */
export interface KeepOptions {
  /**
   * The directory of the helpers' sockets, `helper-<slot>.sock`: an absolute path (a later
   * process may run elsewhere), made 0700 if missing, the caller's alone. One pool per directory.
   */
  dir: string;
  /** How long a helper that lost its master waits for another before it ends its tasks. */
  ms: number;
}

/** An exit or a failure a helper reported lately, as the pool's handlers get them. */
export type EndedEvent = ({ ev: 'exited' } & ExitedEvent) | ({ ev: 'failed' } & FailedEvent);

/** What the helpers of a pool run and ended lately (SpawnerPool.status()). */
export interface SpawnerStatus {
  /** The tasks whose main process runs, and its pid. */
  running: { uid: string; pid: number }[];
  /** The uids of spawns queued behind another (SpawnSpec.after). */
  queued: string[];
  /** Each helper's last (up to 1,024) exits and failures, oldest first; helper after helper. */
  ended: EndedEvent[];
}

/** The longest socket path Linux takes, in bytes (sun_path less its NUL). */
const MAX_SOCKET_PATH = 107;

/** The socket of the helper in `slot`; a UsageError when the path is too long for a socket. */
export function keepSocket(keep: KeepOptions, slot: number): string {
  const file = `${keep.dir.replace(/\/+$/, '')}/helper-${slot}.sock`;
  if (Buffer.byteLength(file) > MAX_SOCKET_PATH) {
    throw new UsageError(
      `SpawnerPool keep.dir '${keep.dir}' is too long: the socket '${file}' must be at most ${MAX_SOCKET_PATH} bytes`,
    );
  }
  return file;
}

/** Checks the keep options of a pool of `count` helpers (UsageError naming what is wrong). */
export function checkKeep(keep: KeepOptions, count: number): void {
  if (typeof keep.dir !== 'string' || !keep.dir.startsWith('/')) {
    const got = String(keep.dir);
    throw new UsageError(`SpawnerPool keep.dir must be an absolute directory path, got '${got}'`);
  }
  if (!Number.isSafeInteger(keep.ms) || keep.ms < 0) {
    throw new UsageError(`SpawnerPool keep.ms must be a whole number >= 0, got ${keep.ms}`);
  }
  keepSocket(keep, Math.max(0, count - 1)); // the longest name
}

/** The arguments that put the helper of `slot` in keep mode. */
export function keepArgs(keep: KeepOptions, slot: number): string[] {
  return ['--keep', keepSocket(keep, slot), '--keep-ms', String(keep.ms)];
}

/** The status events of several helpers as one, their ends as the handlers get them. */
export function mergeStatus(statuses: readonly HelperStatus[]): SpawnerStatus {
  return {
    running: statuses.flatMap((s) => s.running),
    queued: statuses.flatMap((s) => s.queued),
    ended: statuses.flatMap((s) =>
      s.ended.map((e): EndedEvent =>
        e.ev === 'failed'
          ? { ev: 'failed', uid: e.uid, code: e.code, message: e.message }
          : { ev: 'exited', ...exitedOf(e) },
      ),
    ),
  };
}

/**
 * Per slot (0..count-1), the generation of the next stream file, given the names in the stream
 * directory (`spawner.<slot>.<generation>.pfout`, and its parts `...<generation>-<part>.pfout`):
 * one past the highest there, so a replacement never appends to a file a helper before it wrote.
 */
export function nextGenerations(names: readonly string[], count: number): number[] {
  const next = Array.from({ length: count }, () => 0);
  for (const name of names) {
    const m = /^spawner\.(\d+)\.(\d+)(?:-\d+)?\.pfout$/.exec(name);
    const slot = Number(m?.[1]);
    if (m !== null && slot < count) next[slot] = Math.max(next[slot]!, Number(m[2]) + 1);
  }
  return next;
}
