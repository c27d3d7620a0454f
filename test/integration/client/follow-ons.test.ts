import { describe, expect, it } from '@jest/globals';
import { readProfile } from '../../../src/profile/read';
import type { AttemptProfile } from '../../../src/profile/types';
import { fixtures } from '../../support/session-fixture';

/**
 * Follow-on starts on a real local pilot: many identical short tasks, more than its cores. The
 * AgentScheduler queues some on running ones' slots and their spawner helper starts them as
 * those end (docs/state-model.md, "Follow-on starts").
 */
describe('follow-on starts on a local pilot', () => {
  const fixture = fixtures();

  it('start each follower after the task it follows ended, one task per core at a time', async () => {
    const fx = await fixture.open({ cores: 2, agent: { output: 'stream' } });
    // the scheduler follows a shape only once it has seen its tasks end quickly
    await fx.tmgr.submitTasks(Array.from({ length: 8 }, () => ({ executable: '/bin/true' })));
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    const tasks = await fx.tmgr.submitTasks(
      Array.from({ length: 300 }, () => ({ executable: '/bin/true', timeoutS: 60 })),
    );
    await fx.tmgr.waitTasks({ timeoutMs: 120_000 });
    expect(tasks.filter((t) => t.state !== 'DONE')).toEqual([]);
    await fx.session.close(); // every notification is in the store now

    const profile = await readProfile(fx.session.dir);
    const attempts = new Map<string, AttemptProfile>(
      profile.tasks.map((t) => [t.uid, t.attempts[0]!]),
    );
    const followers = [...attempts.values()].filter((a) => a.follows !== undefined);
    expect(followers.length).toBeGreaterThan(0);
    for (const a of followers) {
      const before = attempts.get(a.follows!)!;
      // the same core, and it ran only once the one it followed had ended
      expect(a.slots).toEqual(before.slots);
      expect(a.launched!).toBeGreaterThanOrEqual(before.exited!);
    }
    // the one followed says so, where it still ran when its follower reached the Executor
    expect([...attempts.values()].some((a) => a.followed === true)).toBe(true);
    // on each core, one task at a time: launches and exits never overlap
    const byCore = new Map<string, [number, number][]>();
    for (const a of attempts.values()) {
      const core = `${a.slots![0]!.node}/${a.slots![0]!.cores.join(',')}`;
      const runs = byCore.get(core) ?? [];
      runs.push([a.launched!, a.exited!]);
      byCore.set(core, runs);
    }
    for (const runs of byCore.values()) {
      runs.sort((x, y) => x[0] - y[0]);
      for (let i = 1; i < runs.length; i++) {
        expect(runs[i]![0]).toBeGreaterThanOrEqual(runs[i - 1]![1]);
      }
    }
  });

  it('are off on a pilot whose agent says followOns: false', async () => {
    const fx = await fixture.open({ cores: 2, agent: { followOns: false } });
    const warm = await fx.tmgr.submitTasks(
      Array.from({ length: 8 }, () => ({ executable: '/bin/true' })),
    );
    await fx.tmgr.waitTasks({ uids: warm.map((t) => t.uid), timeoutMs: 60_000 });
    const tasks = await fx.tmgr.submitTasks(
      Array.from({ length: 300 }, () => ({ executable: '/bin/true' })),
    );
    await fx.tmgr.waitTasks({ timeoutMs: 120_000 });
    expect(tasks.filter((t) => t.state !== 'DONE')).toEqual([]);
    await fx.session.close();
    const profile = await readProfile(fx.session.dir);
    expect(profile.tasks.filter((t) => t.attempts[0]!.follows !== undefined)).toEqual([]);
  });

  it('a cancel reaches followers still queued in their helper: every task ends, none hangs', async () => {
    const fx = await fixture.open({ cores: 1, agent: { output: 'stream' } });
    await fx.tmgr.submitTasks(Array.from({ length: 8 }, () => ({ executable: '/bin/true' })));
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    const tasks = await fx.tmgr.submitTasks(
      Array.from({ length: 200 }, () => ({ executable: '/bin/sh', arguments: ['-c', 'exit 0'] })),
    );
    // cancel all once some have ended: the others wait in the scheduler or in a helper's queue
    await fx.tmgr.waitTasks({ uids: [tasks[20]!.uid], timeoutMs: 60_000 });
    await fx.tmgr.cancelTasks(tasks.map((t) => t.uid));
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    const states = new Set(tasks.map((t) => t.state));
    expect([...states].every((s) => s === 'DONE' || s === 'CANCELED')).toBe(true);
    // wherever the cancel found them (the client, the scheduler, a helper's queue, running)
    const canceled = tasks.filter((t) => t.state === 'CANCELED');
    expect(canceled.length).toBeGreaterThan(0);
    for (const t of canceled) expect(t.reason?.message).toMatch(/^task (was )?canceled/);
  });
});
