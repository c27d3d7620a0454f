import { existsSync, mkdirSync, rmdir, writeFileSync } from 'node:fs';
import type { TaskRecord } from '../../generated';
import { readTailSync } from '../../lib/file-tail';
import { PRIVATE_DIR, PRIVATE_FILE } from '../../lib/private-files';

/** Sandboxes made (or tails read) per event-loop turn: the loop stays responsive between. */
const CHUNK = 256;

/**
 * Makes the sandboxes of a bulk with synchronous calls, CHUNK per turn, reporting each chunk
 * as it is done, so the first tasks go on to scheduling while the rest are made. Measured:
 * 5,000 sandboxes through fs.promises took 4.3 s (four pool threads, ~10 round trips per
 * task); synchronously, ~0.2 s. On a shared filesystem with slow metadata the loop would
 * stall on them: there the work belongs in the spawner helpers.
 */
export function makeSandboxes(
  tasks: TaskRecord[],
  done: (results: { uid: string; error?: { code: string; message: string } }[]) => void,
  /** Tasks whose sandbox exists already (reported made, in their place in the bulk). */
  exists: (task: TaskRecord) => boolean = () => false,
  /** Write each description as `task.json` in its sandbox (a debugging aid: agent.taskJson). */
  taskJson = false,
): void {
  inChunks(tasks, (chunk) =>
    done(chunk.map((t) => (exists(t) ? { uid: t.uid } : makeSandboxSync(t, taskJson)))),
  );
}

function makeSandboxSync(
  task: TaskRecord,
  taskJson: boolean,
): {
  uid: string;
  error?: { code: string; message: string };
} {
  try {
    mkdirSync(task.sandbox!, { recursive: true, mode: PRIVATE_DIR });
    if (!taskJson) return { uid: task.uid };
    writeFileSync(`${task.sandbox!}/task.json`, JSON.stringify(task.description), {
      mode: PRIVATE_FILE,
    });
    return { uid: task.uid };
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    return { uid: task.uid, error: { code: err.code ?? 'EIO', message: err.message } };
  }
}

/** Removals in flight at once: libuv's pool has four threads, and staging shares them. */
const REMOVALS_AT_ONCE = 2;
/** Directories waiting for removal, from `next` on: a shift() per removal is O(n) once long. */
let toRemove: string[] = [];
let next = 0;
let removing = 0;

/**
 * Removes each directory that is empty, in the background: one rmdir each, which fails
 * (ENOTEMPTY, ENOENT), and so leaves it, when something is in it or it is gone already. Off the
 * event loop and off the spawner helpers: measured on this VM's ext4 under load, an rmdir took
 * 0.1 to 2 ms, and done by the helpers before each exit it halved the tasks per second.
 */
export function removeEmptyDirs(dirs: string[]): void {
  // a spawner helper took most away already (SpawnSpec.recycle): a lookup that finds nothing
  // costs ~2 us here, an rmdir through libuv's pool ~40 us of the agent's CPU even then
  for (const d of dirs) if (existsSync(d)) toRemove.push(d);
  while (removing < REMOVALS_AT_ONCE && next < toRemove.length) removeNext();
}

function removeNext(): void {
  if (next >= toRemove.length) {
    [toRemove, next] = [[], 0];
    return;
  }
  const dir = toRemove[next++]!;
  removing += 1;
  // an error (not empty, or not there) leaves it as it is
  rmdir(dir, () => {
    removing -= 1;
    removeNext();
  });
}

/** Reads the stdout/stderr tails of finished tasks, CHUNK per turn, reporting each chunk. */
export function readTails(
  tasks: TaskRecord[],
  done: (results: { uid: string; stdout: string; stderr: string }[]) => void,
): void {
  inChunks(tasks, (chunk) =>
    done(
      chunk.map((t) => ({
        uid: t.uid,
        stdout: readTailSync(`${t.sandbox!}/stdout`),
        stderr: readTailSync(`${t.sandbox!}/stderr`),
      })),
    ),
  );
}

function inChunks<T>(items: T[], each: (chunk: T[]) => void): void {
  const step = (from: number): void => {
    each(items.slice(from, from + CHUNK));
    if (from + CHUNK < items.length) setImmediate(() => step(from + CHUNK));
  };
  if (items.length > 0) step(0);
}
