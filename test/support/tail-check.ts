import { expect } from '@jest/globals';
import * as path from 'node:path';
import type { TaskManager } from '../../src/client/task-manager';
import type { TaskDescription } from '../../src/generated';
import { withTimeout } from '../../src/lib/deferred';
import { startCli } from './cli';
import { closedGate } from './flock-gate';
import type { Fixture } from './session-fixture';

/**
 * A task that prints a line, waits on a gate the test holds (flock), then prints two lines and
 * a partial one; its stderr gets a line too. `$0` is the gate.
 */
export const GATED_PRINTER = [
  '-c',
  'echo first; echo oops >&2; flock -s "$0" true; echo second; echo third; printf partial',
];

/**
 * Follows a gated printer with tmgr.tail: the first line comes while the task still runs (the
 * gate is closed), the rest once the gate opens, then the follower ends with the task. Returns
 * the task's uid. `extra`: more of its description (its `output`).
 */
export async function followGatedPrinter(
  tmgr: TaskManager,
  root: string,
  extra: Partial<TaskDescription> = {},
): Promise<string> {
  const gate = await closedGate(path.join(root, 'gate'));
  try {
    const [task] = await tmgr.submitTasks([
      { executable: '/bin/sh', arguments: [...GATED_PRINTER, path.join(root, 'gate')], ...extra },
    ]);
    const lines = tmgr.tail(task!.uid, { follow: true });
    const first = await withTimeout(lines.next(), 60_000, 'the first line');
    expect(first).toEqual({ done: false, value: 'first' });
    expect(task!.final).toBe(false); // the gate holds it
    await gate.open();
    const rest: string[] = [];
    await withTimeout(
      (async () => {
        for await (const l of lines) rest.push(l);
      })(),
      60_000,
      'the follower to end',
    );
    expect(rest).toEqual(['second', 'third', 'partial']);
    expect(task!.state).toBe('DONE');
    return task!.uid;
  } finally {
    gate.remove();
  }
}

/** All the lines of an iterator. */
export async function collect(it: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const l of it) out.push(l);
  return out;
}

/**
 * The same through `pilotfish tail SESSION UID -f` in a child process, which reads the
 * session's store and the task's sandbox: the first line while the task runs, the rest once
 * the gate opens, then exit 0 with the task. Returns the tail's arguments (session, uid, --dir).
 */
export async function cliFollowGatedPrinter(fx: Fixture, root: string): Promise<string[]> {
  const gatePath = path.join(root, 'gate');
  const gate = await closedGate(gatePath);
  try {
    const [task] = await fx.tmgr.submitTasks([
      { executable: '/bin/sh', arguments: [...GATED_PRINTER, gatePath] },
    ]);
    const args = [fx.session.uid, task!.uid, '--dir', fx.dir];
    const follow = startCli(['tail', ...args, '-f']);
    await follow.stdoutMatch(/^first\n/, 120_000);
    expect(task!.final).toBe(false); // the gate holds it
    await gate.open();
    const r = await follow.result;
    expect([r.code, r.stdout, r.stderr]).toEqual([0, 'first\nsecond\nthird\npartial\n', '']);
    expect(task!.state).toBe('DONE');
    return args;
  } finally {
    gate.remove();
  }
}
