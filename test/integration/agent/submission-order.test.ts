import { describe, expect, it } from '@jest/globals';
import type { Task } from '../../../src/client/task';
import { fixtures } from '../../support/session-fixture';

/** Each task prints the time it started (ns since the epoch), taken by the task itself. */
const stamp = (bulk: number, i: number) => ({
  name: `b${bulk}.${i}`,
  executable: '/bin/sh',
  arguments: ['-c', 'date +%s%N'],
});

describe('tasks of equal priority start in submission order (FIFO)', () => {
  const fixture = fixtures();

  it('across three bulks submitted back to back on a 1-core pilot', async () => {
    const fx = await fixture.open({ cores: 1 });
    await fx.pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 30_000 });
    // back to back, each call awaited (it returns once its bulk is handed on) but none waits
    // for its tasks to run: the agent is still taking the first bulk in (256 tasks per
    // event-loop turn, making the sandboxes of those that need one) when the next arrive
    const sizes = [430, 3, 50];
    const bulks: Task[][] = [];
    for (const [b, n] of sizes.entries()) {
      bulks.push(await fx.tmgr.submitTasks(Array.from({ length: n }, (_, i) => stamp(b, i))));
    }
    await fx.tmgr.waitTasks({ timeoutMs: 120_000 });
    const submitted: Task[] = bulks.flat();
    for (const t of submitted) expect(t.state).toBe('DONE');
    const started = (t: Task) => BigInt(t.stdout!.trim());
    // each task that started before a task submitted earlier, with the latest such one
    const overtaken: string[] = [];
    let latest = submitted[0]!;
    for (const t of submitted) {
      if (started(t) >= started(latest)) latest = t;
      else overtaken.push(`${t.description.name} before ${latest.description.name}`);
    }
    expect(overtaken).toEqual([]);
  }, 150_000);
});
