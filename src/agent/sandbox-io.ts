import { promises as fsp } from 'node:fs';
import type { TaskRecord } from '../generated';

const TAIL_BYTES = 2_048;

/** Creates a task's sandbox and writes task.json; resolves with an error instead of throwing. */
export async function makeSandbox(
  task: TaskRecord,
): Promise<{ uid: string; error?: { code: string; message: string } }> {
  try {
    await fsp.mkdir(task.sandbox!, { recursive: true });
    await fsp.writeFile(`${task.sandbox!}/task.json`, JSON.stringify(task.description));
    return { uid: task.uid };
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    return { uid: task.uid, error: { code: err.code ?? 'EIO', message: err.message } };
  }
}

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
    let text = buf.toString('utf8');
    if (size > len) {
      const nl = text.indexOf('\n');
      if (nl >= 0 && nl < text.length - 1) text = text.slice(nl + 1);
    }
    return text;
  } catch {
    return '';
  } finally {
    await fh?.close();
  }
}
