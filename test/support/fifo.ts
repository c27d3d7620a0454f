import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { deferred, withTimeout } from '../../src/lib/deferred';

const WAIT_MS = 8_000;

/** Unblocks FIFO readers still waiting for a writer (a test that failed early). */
const fifoCleanups: (() => void)[] = [];

export function cleanupFifos(): void {
  for (const cleanup of fifoCleanups.splice(0)) cleanup();
}

export interface Fifo {
  /** The first chunk written. */
  data(ms?: number): Promise<string>;
  /** Everything read, once `n` lines have arrived. */
  text(n: number, ms?: number): Promise<string>;
  /** The lines read, once `n` have arrived. */
  lines(n: number, ms?: number): Promise<string[]>;
  /** Resolves the moment every process holding the FIFO open for writing has closed it. */
  gone(ms?: number): Promise<void>;
}

/** A FIFO that tasks write to (e.g. as their stdout); call {@link cleanupFifos} after each test. */
export function fifo(file: string): Fifo {
  execFileSync('mkfifo', [file]);
  const reader = fs.createReadStream(file, { encoding: 'utf8' });
  fifoCleanups.push(() => {
    try {
      // A reader blocked in open() returns once a writer opens; ENXIO when none is waiting.
      fs.closeSync(fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK));
    } catch {
      // no reader waiting
    }
    reader.destroy();
  });
  let data = '';
  const complete = (): number => data.split('\n').length - 1;
  let wants: { n: number; resolve: () => void }[] = [];
  const first = deferred<string>();
  reader.on('data', (c) => {
    data += String(c);
    first.resolve(data);
    wants = wants.filter((w) => {
      if (complete() < w.n) return true;
      w.resolve();
      return false;
    });
  });
  const gone = new Promise<void>((resolve) => reader.once('end', () => resolve()));
  const text = (n: number, ms = WAIT_MS): Promise<string> => {
    const d = deferred<void>();
    if (complete() >= n) d.resolve();
    else wants.push({ n, resolve: () => d.resolve() });
    return withTimeout(
      d.promise.then(() => data),
      ms,
      `${n} lines in the fifo`,
    );
  };
  return {
    data: (ms = WAIT_MS) => withTimeout(first.promise, ms, 'first output in the fifo'),
    text,
    lines: async (n, ms) => (await text(n, ms)).split('\n').slice(0, -1),
    gone: (ms = WAIT_MS) => withTimeout(gone, ms, 'every writer of the fifo gone'),
  };
}
