import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ValidationError } from '../../../src/errors';
import type { TaskState } from '../../../src/states/task-model';
import { TASK_STATES } from '../../../src/states/task-model';
import { tempDirs } from '../../support/temp-dirs';
import { fixtures } from '../../support/session-fixture';

/** Dependencies, staging between tasks, retries: real sessions, real processes, real files. */
describe('workflows', () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-wf-');
  const tmp = (): string => temp.make();

  it('runs a diamond whose tasks pass files through task:// staging', async () => {
    const fx = await fixture.open();
    const out = tmp();
    const sh = (script: string) => ({ executable: '/bin/sh', arguments: ['-c', script] });
    await fx.tmgr.submitTasks([
      { uid: 'top', ...sh('echo 5 > n.txt') },
      {
        uid: 'left',
        after: ['top'],
        inputStaging: [{ source: 'task://top/n.txt', target: 'task://in.txt' }],
        ...sh('echo $(( $(cat in.txt) * 2 )) > n.txt'),
      },
      {
        uid: 'right',
        after: ['top'],
        inputStaging: [{ source: 'task://top/n.txt', target: 'task://in.txt', action: 'link' }],
        ...sh('echo $(( $(cat in.txt) + 1 )) > n.txt'),
      },
      {
        uid: 'bottom',
        after: ['left', { task: 'right', on: 'done' }],
        inputStaging: [
          { source: 'task://left/n.txt', target: 'task://l.txt' },
          { source: 'task://right/n.txt', target: 'task://r.txt' },
        ],
        outputStaging: [{ source: 'task://sum.txt', target: `client://${out}/sum.txt` }],
        ...sh('echo $(( $(cat l.txt) + $(cat r.txt) )) > sum.txt'),
      },
    ]);
    const tasks = await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    expect(tasks.map((t) => [t.uid, t.state, t.reason?.message])).toEqual([
      ['top', 'DONE'],
      ['left', 'DONE'],
      ['right', 'DONE'],
      ['bottom', 'DONE'],
    ]);
    expect(fs.readFileSync(path.join(out, 'sum.txt'), 'utf8')).toBe('16\n');
  }, 90_000);

  it('runs a dependency on one pilot and its dependent on another, passing a file', async () => {
    const fx = await fixture.open({ cores: 1 });
    const [other] = await fx.pmgr.submitPilots([{ resource: 'local', cores: 1, runtimeMin: 5 }]);
    fx.tmgr.addPilots([other!]);
    const [a, b] = await fx.tmgr.submitTasks([
      { uid: 'a', pilot: fx.pilot.uid, executable: '/bin/sh', arguments: ['-c', 'echo 41 > n'] },
      {
        uid: 'b',
        pilot: other!.uid,
        after: ['a'],
        inputStaging: [{ source: 'task://a/n', target: 'task://n' }],
        executable: '/bin/sh',
        arguments: ['-c', 'echo $(( $(cat n) + 1 ))'],
      },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    expect([a!.state, a!.pilot, b!.state, b!.pilot]).toEqual([
      'DONE',
      fx.pilot.uid,
      'DONE',
      other!.uid,
    ]);
    expect(b!.stdout).toBe('42\n');
  }, 90_000);

  it('cancels the dependents of a failing task, naming it, and runs an on-failed cleanup', async () => {
    const fx = await fixture.open();
    const [, b, c, cleanup] = await fx.tmgr.submitTasks([
      { uid: 'a', executable: '/bin/false' },
      { uid: 'b', executable: '/bin/true', after: ['a'] },
      { uid: 'c', executable: '/bin/true', after: [{ task: 'b', on: 'final' }, 'b'] },
      { uid: 'cleanup', executable: '/bin/true', after: [{ task: 'a', on: 'failed' }] },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    expect(b!.state).toBe('CANCELED');
    expect(b!.reason).toMatchObject({
      code: 'E_DEPENDENCY',
      component: 'ManagerScheduler',
      message: "dependency a ended FAILED, so its condition 'done' can never hold",
    });
    expect(c!.state).toBe('CANCELED');
    expect(c!.reason?.message).toBe(
      "dependency b ended CANCELED, so its condition 'done' can never hold",
    );
    expect(cleanup!.state).toBe('DONE');
    // never bound to a pilot: canceled while waiting
    expect(b!.history.map((h) => h.state)).toEqual([
      'NEW',
      'TMGR_SCHEDULING_PENDING',
      'TMGR_SCHEDULING',
      'CANCELED',
    ]);
  }, 90_000);

  it('runs a task after one that finished long before, and rejects unknown uids and cycles with paths', async () => {
    const fx = await fixture.open();
    const [old] = await fx.tmgr.submitTasks([{ uid: 'old', executable: '/bin/true' }]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect(old!.state).toBe('DONE');
    const [later] = await fx.tmgr.submitTasks([{ executable: '/bin/true', after: ['old'] }]);
    await fx.tmgr.waitTasks({ uids: [later!.uid], timeoutMs: 30_000 });
    expect(later!.state).toBe('DONE');

    const bad = fx.tmgr.submitTasks([
      { uid: 'x', executable: '/bin/true', after: ['y'] },
      { uid: 'y', executable: '/bin/true', after: ['x', 'nobody'] },
    ]);
    await expect(bad).rejects.toThrow(ValidationError);
    const issues = await bad.catch((e: ValidationError) => e.issues);
    expect(issues).toEqual([
      { path: '/1/after/1', message: "must name a task of the session ('nobody' is none)" },
      { path: '/0/after', message: 'must not wait on itself through others (cycle: x -> y -> x)' },
    ]);
    // nothing of a rejected call is taken on
    expect(fx.tmgr.get('x')).toBeUndefined();
  }, 60_000);

  it('retries a flaky task: DONE on attempt 2, one callback per state per attempt, in order', async () => {
    const fx = await fixture.open();
    const flag = path.join(tmp(), 'tried');
    const seen: [TaskState, number, string | undefined, boolean][] = [];
    fx.tmgr.onState((_t, s, info) =>
      seen.push([s, info.attempt, info.reason?.code, info.inferred]),
    );
    const [t] = await fx.tmgr.submitTasks([
      {
        executable: '/bin/sh',
        // fails the first time it runs, succeeds the second
        arguments: ['-c', 'if [ -e "$0" ]; then exit 0; else touch "$0"; exit 7; fi', flag],
        retries: 2,
      },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    expect(t!.state).toBe('DONE');
    expect(t!.attempt).toBe(2);
    expect(t!.reason).toBeUndefined();
    expect(t!.exitCode).toBe(0);
    const upTo = (s: TaskState) => TASK_STATES.slice(TASK_STATES.indexOf(s));
    // attempt 1 in order as far as it was delivered: its last states may come after attempt 2's
    // first, and are then dropped (docs/state-model.md, rule 4); it ran, so it got that far
    const first = seen.filter(([, a]) => a === 1).map(([s]) => s);
    expect(first).toEqual(TASK_STATES.slice(0, first.length));
    expect(first.length).toBeGreaterThan(TASK_STATES.indexOf('AGENT_EXECUTING'));
    const second = seen.filter(([, a]) => a === 2);
    expect(second.map(([s]) => s)).toEqual(upTo('TMGR_SCHEDULING_PENDING').slice(0, -2));
    expect(seen.length).toBe(first.length + second.length);
    // the retry tells why the first attempt ended (unless its notification came after a later
    // one and the state was inferred); the task counts the retry either way
    const [, , why, inferred] = second[0]!;
    expect(inferred ? 'inferred' : why).toBe(inferred ? 'inferred' : 'E_EXIT_CODE');
    expect(t!.retried).toBe(1);
  }, 90_000);

  it('transfers a file in and out over the session connection', async () => {
    const fx = await fixture.open();
    const d = tmp();
    fs.writeFileSync(path.join(d, 'in.txt'), 'hello over the wire\n');
    const [t] = await fx.tmgr.submitTasks([
      {
        executable: '/bin/sh',
        arguments: ['-c', 'tr a-z A-Z < in.txt > out.txt'],
        inputStaging: [
          { source: `client://${d}/in.txt`, target: 'task://in.txt', action: 'transfer' },
        ],
        outputStaging: [
          { source: 'task://out.txt', target: `client://${d}/out.txt`, action: 'transfer' },
          // into a client folder: the file keeps its name
          { source: 'task://out.txt', target: `client://${d}/back/`, action: 'transfer' },
        ],
      },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    expect(t!.reason).toBeUndefined();
    expect(t!.state).toBe('DONE');
    expect(fs.readFileSync(path.join(d, 'out.txt'), 'utf8')).toBe('HELLO OVER THE WIRE\n');
    expect(fs.readFileSync(path.join(d, 'back/out.txt'), 'utf8')).toBe('HELLO OVER THE WIRE\n');
  }, 90_000);
});
