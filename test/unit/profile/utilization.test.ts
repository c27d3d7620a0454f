import { describe, expect, it } from '@jest/globals';
import type { Profile } from '../../../src/profile/types';
import { BUCKETS, utilization, type Account } from '../../../src/profile/utilization';
import { attempt, cores, pilot, s, task } from '../../support/profiles';

const profile = (p: Omit<Profile, 'session' | 'readAt'>, readAt = 1000): Profile => ({
  session: 'pf.test',
  readAt: s(readAt),
  ...p,
});

/** An account with every bucket 0 but the ones given. */
const account = (x: Partial<Account>): Account => {
  const a = { total: 0 } as Account;
  for (const b of BUCKETS) a[b] = 0;
  return { ...a, ...x };
};

function expectAccount(got: Account, want: Partial<Account>): void {
  const w = account(want);
  for (const k of ['total', ...BUCKETS] as const) {
    expect([k, got[k]]).toEqual([k, expect.closeTo(w[k], 9)]);
  }
}

const node4 = [{ name: 'n1', cores: 4, gpus: 0 }];

describe('utilization', () => {
  it('puts every core-second of one node in its bucket: start-up, phases, idle, draining', () => {
    const p = pilot('p1', node4, { job: 0, pending: 1, active: 10, drain: 90, end: 100 });
    const t = task(
      't1',
      attempt(
        'p1',
        { wait: 10, alloc: 12, exec: 13, launched: 14, exited: 50, release: 51, end: 52 },
        [cores('n1', 0, 1)],
      ),
    );
    const [r] = utilization(profile({ pilots: [p], tasks: [t] })).pilots;
    // waiting 10..12 for 2 cores while 4 are free: 2 cores x 2 s overhead; the rest idle by plan
    expectAccount(r!.coreSeconds, {
      total: 400,
      startUp: 40,
      scheduling: 2,
      launching: 2,
      running: 72,
      tearingDown: 2,
      idleOverhead: 4,
      idlePlan: 320 - 78 - 4,
      draining: 40,
    });
    expect(r!.utilization).toBeCloseTo(72 / 400, 12);
    expect(r!.efficiency).toBeCloseTo(72 / (400 - 238 - 40 - 40), 12);
    expect(r!.check.ok).toBe(true);
    expect(r!.gpuUtilization).toBeNull();
    expect([r!.start, r!.end]).toEqual([s(0), s(100)]);
  });

  it('counts the slots of follow-on starts once: the follower holds them from its launch', () => {
    const p = pilot('p1', node4, { job: 0, pending: 0, active: 0, end: 100 });
    // b was given a's core at 20 while a ran, and its helper started it when a exited at 50;
    // the agent heard of a's exit (its release) only at 52
    const a = attempt(
      'p1',
      { alloc: 10, exec: 10, launched: 10, exited: 50, release: 52, end: 53 },
      [cores('n1', 0)],
    );
    a.followed = true;
    const b = attempt(
      'p1',
      { wait: 15, alloc: 20, exec: 20, launched: 50, exited: 90, release: 90, end: 91 },
      [cores('n1', 0)],
    );
    b.follows = 't1';
    const [r] = utilization(profile({ pilots: [p], tasks: [task('t1', a), task('t2', b)] })).pilots;
    // and it waited (15..50) while 3 cores were free: that core's wait is overhead
    expectAccount(r!.coreSeconds, { total: 400, running: 80, idleOverhead: 35, idlePlan: 285 });
    expect(r!.check.ok).toBe(true);
  });

  it('starts the window at PMGR_ACTIVE_PENDING where the job start is unknown', () => {
    const p = pilot('p1', node4, { pending: 5, active: 10, end: 20 });
    const [r] = utilization(profile({ pilots: [p], tasks: [] })).pilots;
    expectAccount(r!.coreSeconds, { total: 60, startUp: 20, idlePlan: 40 });
    expect(r!.efficiency).toBeNull(); // nothing the pilot system could have used
  });

  it('counts tasks that overlap in time on different cores, and a task that waits for a core', () => {
    const p = pilot('p1', [{ name: 'n1', cores: 2, gpus: 0 }], { job: 0, active: 0, end: 10 });
    const run = (uid: string, c: number, from: number, to: number) =>
      task(
        uid,
        attempt(
          'p1',
          { wait: 0, alloc: from, exec: from, launched: from, exited: to, release: to, end: to },
          [cores('n1', c)],
        ),
      );
    const tasks = [run('a', 0, 0, 6), run('b', 1, 1, 4), run('c', 1, 5, 8)];
    // c waits 0..5; core 1 is free 0..1 (c would fit: overhead) and 4..5 (overhead again)
    const [r] = utilization(profile({ pilots: [p], tasks })).pilots;
    expectAccount(r!.coreSeconds, {
      total: 20,
      running: 6 + 3 + 3,
      idleOverhead: 1 + 1,
      idlePlan: 4 + 2, // core 0 after 6, core 1 after 8
    });
  });

  it('falls back to the neighbouring instant where one is missing, and the sum stays exact', () => {
    const p = pilot('p1', node4, { job: 0, active: 0, end: 20 });
    const tasks = [
      // no AGENT_EXECUTING: scheduling stretches to the launch
      task(
        'a',
        attempt('p1', { alloc: 1, launched: 3, exited: 5, release: 6, end: 7 }, [cores('n1', 0)]),
      ),
      // failed while launching: no launch or exit, released at its final state
      task('b', attempt('p1', { alloc: 1, exec: 2, end: 4 }, [cores('n1', 1)], 'FAILED')),
      // only the launch, the exit and the end are known (a function's quiet states): all running
      task('c', attempt('p1', { launched: 2, exited: 9, end: 9 }, [cores('n1', 2)])),
    ];
    const [r] = utilization(profile({ pilots: [p], tasks })).pilots;
    expectAccount(r!.coreSeconds, {
      total: 80,
      scheduling: 2 + 1,
      launching: 2,
      running: 2 + 7,
      tearingDown: 1,
      idlePlan: 80 - 15,
    });
    expect(r!.check.ok).toBe(true);
  });

  it('accounts GPUs apart from cores; a task waiting for a busy GPU leaves free cores idle by plan', () => {
    const p = pilot('p1', [{ name: 'g1', cores: 2, gpus: 1 }], { job: 0, active: 0, end: 10 });
    const gpuTask = (uid: string, from: number, to: number, wait: number) =>
      task(
        uid,
        attempt(
          'p1',
          { wait, alloc: from, exec: from, launched: from, exited: to, release: to, end: to },
          [{ node: 'g1', cores: [0], gpus: [0] }],
        ),
      );
    const tasks = [gpuTask('a', 0, 4, 0), gpuTask('b', 6, 10, 2)];
    // b waits 2..6: 2..4 the GPU is busy (plan); 4..6 it is free and b fits (overhead)
    const [r] = utilization(profile({ pilots: [p], tasks })).pilots;
    expectAccount(r!.gpuSeconds, { total: 10, running: 8, idleOverhead: 2 });
    expectAccount(r!.coreSeconds, { total: 20, running: 8, idleOverhead: 2, idlePlan: 10 });
    expect(r!.gpuUtilization).toBeCloseTo(0.8, 12);
    expect(r!.gpuEfficiency).toBeCloseTo(0.8, 12);
  });

  it('spans several nodes: a task fits only on a node with enough free cores', () => {
    const nodes = [
      { name: 'n1', cores: 2, gpus: 0 },
      { name: 'n2', cores: 2, gpus: 0 },
    ];
    const p = pilot('p1', nodes, { job: 0, active: 0, end: 10 });
    const at = (from: number, to: number, wait = from) => ({
      wait,
      alloc: from,
      exec: from,
      launched: from,
      exited: to,
      release: to,
      end: to,
    });
    const tasks = [
      task('mpi', attempt('p1', at(0, 5), [cores('n1', 0), cores('n2', 0)])),
      task('w1', attempt('p1', at(0, 10), [cores('n1', 1)])),
      // needs 2 cores on one node: 1 free on n2 0..5 (no fit: plan), 2 free 5..6 (fit: overhead)
      task('wide', attempt('p1', at(6, 10, 0), [cores('n2', 0, 1)])),
    ];
    const [r] = utilization(profile({ pilots: [p], tasks })).pilots;
    expect(r!.nodes).toBe(2);
    expectAccount(r!.coreSeconds, {
      total: 40,
      running: 10 + 10 + 8,
      idleOverhead: 2,
      idlePlan: 5 + 5, // n1 core 0 after 5, n2 core 1 before 5
    });
  });

  it('counts each attempt on its own pilot (a retry on another pilot)', () => {
    const one = [{ name: 'a', cores: 1, gpus: 0 }];
    const p1 = pilot('p1', one, { job: 0, active: 0, end: 10 });
    const p2 = pilot('p2', [{ name: 'b', cores: 1, gpus: 0 }], { job: 0, active: 0, end: 10 });
    const t = task(
      't',
      attempt(
        'p1',
        { alloc: 0, exec: 0, launched: 1, exited: 3, end: 3 },
        [cores('a', 0)],
        'FAILED',
      ),
      attempt(
        'p2',
        { alloc: 4, exec: 4, launched: 5, exited: 9, release: 9, end: 9 },
        [cores('b', 0)],
        'DONE',
        2,
      ),
    );
    const [r1, r2] = utilization(profile({ pilots: [p1, p2], tasks: [t] })).pilots;
    expectAccount(r1!.coreSeconds, { total: 10, launching: 1, running: 2, idlePlan: 7 });
    expectAccount(r2!.coreSeconds, { total: 10, launching: 1, running: 4, idlePlan: 5 });
  });

  it('counts a core that two attempts claim at once only once, for the earlier', () => {
    const p = pilot('p1', [{ name: 'n1', cores: 1, gpus: 0 }], { job: 0, active: 0, end: 10 });
    const at = (from: number, to: number) => ({
      alloc: from,
      exec: from,
      launched: from,
      exited: to,
      release: to,
      end: to,
    });
    const tasks = [
      task('a', attempt('p1', at(1, 5), [cores('n1', 0)])),
      task('b', attempt('p1', at(3, 7), [cores('n1', 0)])),
    ];
    const [r] = utilization(profile({ pilots: [p], tasks })).pilots;
    expectAccount(r!.coreSeconds, { total: 10, running: 6, idlePlan: 4 });
  });

  it('ends a live pilot and its running task at readAt', () => {
    const p = pilot('p1', node4, { job: 0, active: 2 });
    const t = task('t', attempt('p1', { alloc: 4, exec: 4, launched: 5 }, [cores('n1', 0)]));
    const [r] = utilization(profile({ pilots: [p], tasks: [t] }, 10)).pilots;
    expectAccount(r!.coreSeconds, {
      total: 40,
      startUp: 8,
      launching: 1,
      running: 5,
      idlePlan: 26,
    });
  });

  it('reads the nodes off the slots where the pilot does not list them', () => {
    const p = pilot('p1', undefined, { job: 0, active: 0, end: 10 });
    const t = task(
      't',
      attempt('p1', { alloc: 0, exec: 0, launched: 0, exited: 10, end: 10 }, [cores('x', 0, 2)]),
    );
    const [r] = utilization(profile({ pilots: [p], tasks: [t] })).pilots;
    expect([r!.nodesInferred, r!.cores]).toEqual([true, 3]);
    expectAccount(r!.coreSeconds, { total: 30, running: 20, idlePlan: 10 });
  });

  it('gives a pilot whose job never started no core-second and no ratio', () => {
    const p = pilot('p1', node4, {});
    const r = utilization(profile({ pilots: [p], tasks: [] }));
    expectAccount(r.pilots[0]!.coreSeconds, {});
    expect([r.pilots[0]!.utilization, r.all.utilization, r.all.check.ok]).toEqual([
      null,
      null,
      true,
    ]);
  });

  it('adds every pilot into `all`', () => {
    const p1 = pilot('p1', node4, { job: 0, active: 0, end: 10 });
    const p2 = pilot('p2', [{ name: 'n2', cores: 2, gpus: 1 }], { job: 0, active: 5, end: 10 });
    const r = utilization(profile({ pilots: [p1, p2], tasks: [] }));
    expect([r.all.cores, r.all.gpus]).toEqual([6, 1]);
    expectAccount(r.all.coreSeconds, { total: 60, startUp: 10, idlePlan: 50 });
    expectAccount(r.all.gpuSeconds, { total: 10, startUp: 5, idlePlan: 5 });
  });
});
