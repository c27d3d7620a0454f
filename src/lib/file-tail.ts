import { closeSync, fstatSync, openSync, promises as fsp, readSync } from 'node:fs';

/** Enough of a task's or an agent's stdout/stderr to say why it failed. */
export const TAIL_BYTES = 2_048;

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

/**
 * A tail as shown: `text` from the start of its first whole line when `cut` (bytes before it
 * were left out), unless that would leave nothing. Spawner helpers' tails (ExitedEvent.output)
 * are cut so too.
 */
export function cutToLine(text: string, cut: boolean): string {
  if (!cut) return text;
  const nl = text.indexOf('\n');
  return nl >= 0 && nl < text.length - 1 ? text.slice(nl + 1) : text;
}
