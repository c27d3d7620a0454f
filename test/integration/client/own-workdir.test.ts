import { afterEach, describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempDirs } from '../../support/temp-dirs';
import { gone } from '../../support/dir-entries';
import { fixtures } from '../../support/session-fixture';

/**
 * Every task works in a directory of its own unless it asks for the pilot's (`workdir:
 * 'pilot'`): a sweep whose tasks all write the same name loses nothing, `task://<uid>/` names
 * that task's own directory, and relative staging paths mean what RADICAL-Pilot's mean.
 */
describe('own working directories by default', () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-workdir-');
  const home = process.cwd();
  afterEach(() => process.chdir(home));

  /** `n` tasks writing their number to out.txt, then reading it back after a while. */
  function sweep(n: number, extra: Record<string, unknown> = {}) {
    return Array.from({ length: n }, (_, i) => ({
      executable: '/bin/sh',
      arguments: ['-c', `echo ${i} > out.txt; sleep 0.2; cat out.txt`],
      ...extra,
    }));
  }

  it('gives each task of a sweep writing out.txt its own directory: 20 own numbers', async () => {
    const fx = await fixture.open();
    const tasks = await fx.tmgr.submitTasks(sweep(20));
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    expect(tasks.map((t) => t.state)).toEqual(tasks.map(() => 'DONE'));
    expect(tasks.map((t) => (t.stdout ?? '').trim())).toEqual(tasks.map((_, i) => String(i)));
    for (const t of tasks) {
      expect(t.sandbox).toBe(path.join(fx.pilot.sandbox, t.uid));
      expect(fs.readFileSync(path.join(t.sandbox!, 'out.txt'), 'utf8')).toBe(
        `${tasks.indexOf(t)}\n`,
      );
    }
  }, 70_000);

  it("shares the pilot's sandbox only when asked: workdir 'pilot' (and sandbox: false)", async () => {
    const fx = await fixture.open();
    const [a, b] = await fx.tmgr.submitTasks([
      {
        uid: 'share-a',
        executable: '/bin/sh',
        arguments: ['-c', 'echo a > shared.txt; pwd; echo "$PF_TASK_SANDBOX"'],
        workdir: 'pilot',
      },
      {
        executable: '/bin/sh',
        arguments: ['-c', 'cat shared.txt; pwd'],
        sandbox: false,
        after: ['share-a'],
      },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    const pilotDir = fs.realpathSync(fx.pilot.sandbox);
    expect(a!.state).toBe('DONE');
    expect((a!.stdout ?? '').trim().split('\n')).toEqual([pilotDir, fx.pilot.sandbox]);
    expect(a!.sandbox).toBe(fx.pilot.sandbox);
    expect(b!.state).toBe('DONE');
    expect((b!.stdout ?? '').trim().split('\n')).toEqual(['a', pilotDir]);
    expect(fs.readFileSync(path.join(fx.pilot.sandbox, 'shared.txt'), 'utf8')).toBe('a\n');
    expect(fs.existsSync(path.join(fx.pilot.sandbox, a!.uid))).toBe(false);
  }, 40_000);

  it('removes a task directory that stayed empty; PF_TASK_SANDBOX and the cwd name it', async () => {
    const fx = await fixture.open();
    const [t] = await fx.tmgr.submitTasks([
      { executable: '/bin/sh', arguments: ['-c', 'pwd; echo "$PF_TASK_SANDBOX"'] },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect(t!.state).toBe('DONE');
    const own = path.join(fx.pilot.sandbox, t!.uid);
    expect((t!.stdout ?? '').trim().split('\n')).toEqual([
      path.join(fs.realpathSync(fx.pilot.sandbox), t!.uid),
      own,
    ]);
    await gone([own], 10_000); // removed in the background, once it ended
  }, 40_000);

  it('sums the out.txt of 40 tasks read by uid through task://<uid>/out.txt', async () => {
    const fx = await fixture.open();
    const n = 40;
    const writers = await fx.tmgr.submitTasks(
      Array.from({ length: n }, (_, i) => ({
        executable: '/bin/sh',
        arguments: ['-c', `echo ${i + 1} > out.txt`],
      })),
    );
    const [reducer] = await fx.tmgr.submitTasks([
      {
        executable: '/bin/sh',
        arguments: ['-c', 'cat in/* | awk "{ s += \\$1 } END { print s }"'],
        after: writers.map((w) => w.uid),
        inputStaging: writers.map((w) => ({
          source: `task://${w.uid}/out.txt`,
          target: `in/${w.uid}`,
        })),
      },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 90_000 });
    expect(reducer!.reason).toBeUndefined();
    expect((reducer!.stdout ?? '').trim()).toBe(String((n * (n + 1)) / 2));
  }, 100_000);

  it('fails a read of a task:// path that does not exist, naming the path', async () => {
    const fx = await fixture.open();
    const [writer] = await fx.tmgr.submitTasks([
      { executable: '/bin/sh', arguments: ['-c', 'echo 1 > out.txt'] },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    const [reader] = await fx.tmgr.submitTasks([
      {
        executable: '/bin/true',
        inputStaging: [{ source: `task://${writer!.uid}/missing.txt`, target: 'in.txt' }],
      },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect(reader!.state).toBe('FAILED');
    expect(reader!.reason?.code).toBe('E_STAGING');
    expect(reader!.reason?.message).toContain(
      path.join(fx.pilot.sandbox, writer!.uid, 'missing.txt'),
    );
  }, 40_000);

  it("takes relative staging paths as RADICAL-Pilot does: the client's cwd and the task's directory", async () => {
    const client = temp.make();
    fs.writeFileSync(path.join(client, 'input.dat'), '20\n');
    process.chdir(client);
    const fx = await fixture.open();
    const [t] = await fx.tmgr.submitTasks([
      {
        executable: '/bin/sh',
        arguments: ['-c', 'echo $(( $(cat input.dat) + 1 )) > result.dat'],
        inputStaging: [{ source: 'input.dat', target: 'input.dat' }],
        outputStaging: [{ source: 'result.dat', target: 'results/result.dat' }],
      },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect(t!.reason).toBeUndefined();
    expect(fs.readFileSync(path.join(t!.sandbox!, 'input.dat'), 'utf8')).toBe('20\n');
    expect(fs.readFileSync(path.join(client, 'results', 'result.dat'), 'utf8')).toBe('21\n');
  }, 40_000);

  it('puts the task directories under agent.taskDirs: task://, staging and removal find them there', async () => {
    const local = temp.make();
    const client = temp.make();
    process.chdir(client);
    // ($NAME expansion: test/unit/agent/task-dirs.test.ts; jest's process.env is not the agent's)
    const fx = await fixture.open({ agent: { taskDirs: `${local}/node` } });
    const root = path.join(local, 'node', fx.session.uid, fx.pilot.uid);
    const [writer, idle] = await fx.tmgr.submitTasks([
      { executable: '/bin/sh', arguments: ['-c', 'echo 21 > out.txt; echo "$PF_TASK_SANDBOX"'] },
      { executable: '/bin/true' },
    ]);
    const [reader] = await fx.tmgr.submitTasks([
      {
        executable: '/bin/sh',
        arguments: ['-c', 'echo $(( $(cat in.txt) * 2 )) > doubled.txt'],
        after: [writer!.uid],
        inputStaging: [{ source: `task://${writer!.uid}/out.txt`, target: 'in.txt' }],
        outputStaging: [{ source: 'doubled.txt', target: 'doubled.txt' }],
      },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect([writer!.state, reader!.state, reader!.reason]).toEqual(['DONE', 'DONE', undefined]);
    expect(writer!.sandbox).toBe(path.join(root, writer!.uid));
    expect((writer!.stdout ?? '').trim()).toBe(writer!.sandbox);
    expect(fs.readFileSync(path.join(root, writer!.uid, 'out.txt'), 'utf8')).toBe('21\n');
    expect(fs.readFileSync(path.join(client, 'doubled.txt'), 'utf8')).toBe('42\n');
    expect(fs.existsSync(path.join(fx.pilot.sandbox, writer!.uid))).toBe(false);
    await gone([path.join(root, idle!.uid)], 10_000);
  }, 40_000);
});
