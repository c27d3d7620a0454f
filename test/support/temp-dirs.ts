import { afterEach } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Task } from '../../src/client/task';

/** For a describe block: `make()` gives a fresh temp directory, removed after each test. */
export function tempDirs(prefix: string): { make(): string } {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });
  return {
    make: () => {
      const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
      dirs.push(d);
      return d;
    },
  };
}

/** The last state a task passed before its final one. */
export function stateBeforeFinal(t: Task): string | undefined {
  const states = t.history.map((h) => h.state);
  return states[states.length - 2];
}
