import { afterEach } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Task } from '../../src/client/task';
import { TASK_STATES, type TaskState } from '../../src/states/task-model';

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

/**
 * Whether a task that ended FAILED or CANCELED in `state` passed nothing after it: the states
 * delivered before its final one are all `state` or earlier. (Which of them were delivered
 * depends on the order notifications reach the store: a final state is delivered alone, and
 * states that arrive after it are dropped, so `state` itself may be missing.)
 */
export function endedIn(t: Task, state: TaskState): boolean {
  const before = t.history.slice(0, -1).map((h) => TASK_STATES.indexOf(h.state));
  return before.every((rank) => rank <= TASK_STATES.indexOf(state));
}
