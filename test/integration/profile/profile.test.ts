import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readProfile } from '../../../src/profile/read';
import type { AttemptProfile } from '../../../src/profile/types';
import { TASK_STATES, type TaskState } from '../../../src/states/task-model';
import { fixtures } from '../../support/session-fixture';
import { tempDirs } from '../../support/temp-dirs';

const ALL_TO_DONE = TASK_STATES.slice(0, TASK_STATES.indexOf('DONE') + 1);

/** Every state to DONE, each with a real time, in order; where it ran; when its command ran. */
function expectComplete(a: AttemptProfile, pilot: string, node: string): void {
  expect(a.states.map((s) => s.state)).toEqual(ALL_TO_DONE);
  for (let i = 1; i < a.states.length; i++) {
    expect(a.states[i]!.ts).toBeGreaterThanOrEqual(a.states[i - 1]!.ts);
  }
  const at = (s: TaskState) => a.states.find((x) => x.state === s)!.ts;
  expect(a).toMatchObject({ final: 'DONE', pilot, exitCode: 0 });
  expect(a.slots).toEqual([{ node, cores: [expect.any(Number)], gpus: [] }]);
  // the spawner's times lie within the executor's states (whose ts are whole ms); a call's are those states'
  expect(a.launched!).toBeGreaterThanOrEqual(at('AGENT_EXECUTING'));
  expect(a.exited!).toBeGreaterThanOrEqual(a.launched!);
  expect(a.exited!).toBeLessThan(at('AGENT_STAGING_OUTPUT_PENDING') + 1);
}

describe("a session's profile, read from its store", () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-profile-');

  it("holds every state of every task with its real time, slots and command times (executables and function calls), and the pilot's life", async () => {
    const mod = path.join(temp.make(), 'm.js');
    fs.writeFileSync(mod, 'exports.twice = (x) => 2 * x;');
    const fx = await fixture.open();
    const tasks = await fx.tmgr.submitTasks([
      ...Array.from({ length: 30 }, () => ({ executable: '/bin/true' })),
      ...Array.from({ length: 200 }, (_, i) => ({
        mode: 'function' as const,
        function: { module: mod, export: 'twice', args: [i] },
      })),
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    await fx.session.close();
    const profile = await readProfile(fx.session.dir);
    expect(profile.session).toBe(fx.session.uid);
    const [pilot] = profile.pilots;
    const node = pilot!.nodes![0]!.name;
    expect(pilot).toMatchObject({
      uid: fx.pilot.uid,
      resource: 'local',
      final: 'DONE', // ended by the session's close
      nodes: [{ name: node, cores: 2, gpus: 0 }],
      jobStarted: expect.any(Number),
      drainStarted: expect.any(Number),
    });
    const active = pilot!.states.find((s) => s.state === 'PMGR_ACTIVE')!.ts;
    expect(pilot!.jobStarted!).toBeLessThanOrEqual(active);
    expect(profile.tasks).toHaveLength(tasks.length);
    for (const t of profile.tasks) {
      expect(t.attempts).toHaveLength(1);
      expectComplete(t.attempts[0]!, fx.pilot.uid, node);
      expect(t.attempts[0]!.launched!).toBeLessThan(pilot!.drainStarted!);
    }
  }, 90_000);

  it('shows a running task of a live session, where it runs and since when', async () => {
    const dir = temp.make();
    const fx = await fixture.open();
    const [task] = await fx.tmgr.submitTasks([
      {
        executable: '/bin/sh',
        arguments: ['-c', `while [ ! -e ${dir}/go ]; do sleep 0.05; done`],
      },
    ]);
    await fx.tmgr.waitTasks({ uids: [task!.uid], states: ['AGENT_EXECUTING'], timeoutMs: 30_000 });
    // the callback comes from the store's feed: the record is in its file by then
    const live = await fx.session.profile();
    const running = live.tasks.find((t) => t.uid === task!.uid)!.attempts[0]!;
    expect(running.final).toBeUndefined();
    expect(running.states.at(-1)!.state).toBe('AGENT_EXECUTING');
    expect(running.slots).toEqual([
      { node: expect.any(String), cores: [expect.any(Number)], gpus: [] },
    ]);
    fs.writeFileSync(path.join(dir, 'go'), '');
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
  }, 60_000);
});
