import {
  closeSync,
  fstatSync,
  mkdirSync,
  openSync,
  promises as fsp,
  readSync,
  writeFileSync,
} from 'node:fs';
import type { TaskRecord } from '../generated';

const TAIL_BYTES = 2_048;

/** The last bytes of a file ('' when it does not exist), cut at a line start where possible. */
export async function readTail(file: string, bytes = TAIL_BYTES): Promise<string> {
  let fh: fsp.FileHandle | undefined;
  try {
    fh = await fsp.open(file, 'r');
    const { size } = await fh.stat();
    if (size === 0) return '';
    const len = Math.min(size, bytes);
    const buf = Buffer.alloc(len);
    await fh.read(buf, 0, len, size - len);
    return cutToLine(buf.toString('utf8'), size > len);
  } catch {
    return '';
  } finally {
    await fh?.close();
  }
}

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
): void {
  inChunks(tasks, (chunk) => done(chunk.map(makeSandboxSync)));
}

function makeSandboxSync(task: TaskRecord): {
  uid: string;
  error?: { code: string; message: string };
} {
  try {
    mkdirSync(task.sandbox!, { recursive: true });
    writeFileSync(`${task.sandbox!}/task.json`, JSON.stringify(task.description));
    return { uid: task.uid };
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    return { uid: task.uid, error: { code: err.code ?? 'EIO', message: err.message } };
  }
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

/** readTail, synchronously: an empty file (the common case) costs an open, an fstat, a close. */
export function readTailSync(file: string, bytes = TAIL_BYTES): string {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const { size } = fstatSync(fd);
    if (size === 0) return '';
    const len = Math.min(size, bytes);
    const buf = Buffer.alloc(len);
    readSync(fd, buf, 0, len, size - len);
    return cutToLine(buf.toString('utf8'), size > len);
  } catch {
    return '';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function cutToLine(text: string, cut: boolean): string {
  if (!cut) return text;
  const nl = text.indexOf('\n');
  return nl >= 0 && nl < text.length - 1 ? text.slice(nl + 1) : text;
}

function inChunks<T>(items: T[], each: (chunk: T[]) => void): void {
  const step = (from: number): void => {
    each(items.slice(from, from + CHUNK));
    if (from + CHUNK < items.length) setImmediate(() => step(from + CHUNK));
  };
  if (items.length > 0) step(0);
}
