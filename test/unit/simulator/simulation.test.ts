import { describe, expect, it } from '@jest/globals';
import type { PilotDescription, TaskDescription, Workload } from '../../../src/generated';
import { UsageError, ValidationError } from '../../../src/errors';
import { utilization } from '../../../src/profile/utilization';
import {
  simProfile,
  simulate,
  summarize,
  taskTimes,
  type SimulateOptions,
} from '../../../src/simulator';

const local = (cores: number, extra: Partial<PilotDescription> = {}): PilotDescription => ({
  resource: 'local',
  cores,
  gpus: 0,
  memMb: 16_000,
  ...extra,
});

const task = (
  uid: string,
  walltimeS: number,
  extra: Partial<TaskDescription> = {},
): TaskDescription => ({
  uid,
  executable: '/bin/true',
  walltimeS,
  ...extra,
});

/** uid -> [start_s, end_s, state] of a simulation. */
function times(
  w: Workload,
  opts: SimulateOptions = {},
): Record<string, [number | null, number | null, string]> {
  const out: Record<string, [number | null, number | null, string]> = {};
  for (const t of taskTimes(simulate(w, opts))) out[t.uid] = [t.start_s, t.end_s, t.state];
  return out;
}

describe('Simulation', () => {
  // one node of 2 cores: C (priority) and A start; B (2 cores) is the head and waits
  const mix: TaskDescription[] = [
    task('A', 10),
    task('B', 5, { coresPerRank: 2 }),
    task('C', 3, { priority: 10 }),
    task('D', 4),
  ];

  it('starts by priority, then submission; backfills D ahead of the wide B while it does not fit', () => {
    expect(times({ pilots: [local(2)], tasks: mix })).toEqual({
      A: [0, 10, 'DONE'],
      B: [10, 15, 'DONE'],
      C: [0, 3, 'DONE'],
      D: [3, 7, 'DONE'], // backfilled: B cannot use one core
    });
  });

  it('reserves for the head at once with backfillLimit 0: D waits behind B', () => {
    const pilots: Workload['pilots'] = [local(2, { agent: { backfillLimit: 0 } })];
    expect(times({ pilots, tasks: mix })).toEqual({
      A: [0, 10, 'DONE'],
      B: [10, 15, 'DONE'],
      C: [0, 3, 'DONE'],
      D: [15, 19, 'DONE'],
    });
  });

  it('applies agent.launchers: MPI tasks run that many at once, one-rank tasks fork past them', () => {
    // a local pilot of 8 cores: each 2-rank task is one mpirun, the 1-rank ones are forked
    const mpi = (uid: string) => task(uid, 10, { ranks: 2 });
    const tasks = [mpi('M1'), mpi('M2'), mpi('M3'), task('F', 4)];
    const pilots: Workload['pilots'] = [local(8, { agent: { launchers: 2 } })];
    expect(times({ pilots, tasks })).toEqual({
      M1: [0, 10, 'DONE'],
      M2: [0, 10, 'DONE'],
      M3: [10, 20, 'DONE'], // 2 cores were free: it waited for a launcher
      F: [0, 4, 'DONE'],
    });
    // on 4 nodes one rank off the agent's node needs a launcher (srun) too
    const spread = Array.from({ length: 4 }, (_, i) => task(`S${i}`, 5, { coresPerRank: 2 }));
    const nodes = { nodes: 4, cores: 2 };
    const slurm: Workload['pilots'] = [
      { resource: 'slurm', ...nodes, runtimeMin: 10, agent: { launchers: 1 } },
    ];
    const starts = Object.values(times({ pilots: slurm, tasks: spread })).map((t) => t[0]);
    expect(starts.sort((a, b) => a! - b!)).toEqual([0, 0, 5, 10]); // one forked on n0, one srun at a time
  });

  it('starts a dependent when what it waits for ends, and cancels one that can never start', () => {
    const tasks = [
      task('T1', 5),
      task('T2', 3, { after: ['T1'] }),
      task('T3', 1, { after: [{ task: 'T1', on: 'failed' }] }),
    ];
    const r = times({ pilots: [local(4)], tasks });
    expect(r).toEqual({ T1: [0, 5, 'DONE'], T2: [5, 8, 'DONE'], T3: [null, null, 'CANCELED'] });
  });

  it('places GPU tasks on free GPUs and counts GPU utilization as a real run does', () => {
    const w: Workload = {
      pilots: [local(4, { gpus: 1 })],
      tasks: [task('G1', 10, { gpusPerRank: 1 }), task('G2', 5, { gpusPerRank: 1 }), task('X', 2)],
    };
    expect(times(w)).toEqual({ G1: [0, 10, 'DONE'], G2: [10, 15, 'DONE'], X: [0, 2, 'DONE'] });
    const r = summarize(simulate(w));
    expect(r.makespan_s).toBe(15);
    expect(r.utilization.gpu).toBe(1);
    expect(r.utilization.core).toBeCloseTo(17 / 60, 9);
  });

  it('spreads tasks over several pilots through the ManagerScheduler (least loaded first)', () => {
    const w: Workload = {
      pilots: [local(1, { uid: 'p0' }), local(1, { uid: 'p1' })],
      tasks: [task('A', 4), task('B', 4), task('C', 4)],
    };
    const sim = simulate(w);
    const rows = Object.fromEntries([...taskTimes(sim)].map((t) => [t.uid, [t.pilot, t.start_s]]));
    // room: a pilot takes its size again as backlog, so C is bound to p0 behind A
    expect(rows).toEqual({ A: ['p0', 0], B: ['p1', 0], C: ['p0', 4] });
    expect(summarize(sim).makespan_s).toBe(8);
  });

  it('counts tasks that can never fit, with the reason of a real run, and runs the rest', () => {
    const w: Workload = {
      pilots: [local(4)],
      tasks: [
        task('wide', 1, { coresPerRank: 8 }),
        task('fat', 1, { memPerRankMb: 64_000 }),
        task('ok', 1),
      ],
    };
    const r = summarize(simulate(w));
    expect(r.counts).toEqual({ DONE: 1, FAILED: 2, CANCELED: 0, unfinished: 0 });
    expect(r.reasons.map((x) => [x.code, x.count, x.first.uid])).toEqual([
      ['E_NEVER_FITS', 2, 'wide'],
    ]);
  });

  it('starts no task whose walltimeS outlasts its pilot (E_NO_PILOT_TIME), as a real pilot', () => {
    const w: Workload = {
      pilots: [local(1, { runtimeMin: 0.1 })], // 6 s
      tasks: [task('long', 10), task('next', 1)],
    };
    const sim = simulate(w);
    expect(
      Object.fromEntries([...taskTimes(sim)].map((t) => [t.uid, [t.start_s, t.end_s, t.state]])),
    ).toEqual({
      long: [null, null, 'FAILED'],
      next: [0, 1, 'DONE'],
    });
    const r = summarize(sim);
    expect(r.reasons).toEqual([
      expect.objectContaining({
        code: 'E_NO_PILOT_TIME',
        count: 1,
        first: expect.objectContaining({ uid: 'long' }),
      }),
    ]);
    expect(r.pilots[0]!.end_s).toBe(1); // the simulation ends once every task is final
    expect(r.utilization.core).toBe(1);
  });

  it('ends FAILED (E_PILOT_ENDED) a task --jitter lengthened past its pilot; one waiting too long goes back and finds no pilot with the time', () => {
    // 'long' declares 50 s, which fits the pilot's 60; seed 2 draws it past 60 s
    const w: Workload = {
      pilots: [local(2, { runtimeMin: 1 })],
      tasks: [task('long', 50), task('short', 10), task('wide', 5, { coresPerRank: 2 })],
    };
    const sim = simulate(w, { jitter: 0.5, seed: 2 });
    const rows = Object.fromEntries([...taskTimes(sim)].map((t) => [t.uid, t]));
    expect([rows.long!.start_s, rows.long!.end_s, rows.long!.state]).toEqual([0, 60, 'FAILED']);
    expect(rows.short!.state).toBe('DONE');
    // 'wide' waited for both cores while 'long' ran; at 55 s its 5 s no longer fit before the
    // pilot's end: given back, as in a run, and no pilot has the time (E_NO_PILOT_TIME)
    expect([rows.wide!.start_s, rows.wide!.end_s, rows.wide!.state]).toEqual([
      null,
      null,
      'FAILED',
    ]);
    const r = summarize(sim);
    expect(r.counts).toEqual({ DONE: 1, FAILED: 2, CANCELED: 0, unfinished: 0 });
    expect(r.reasons).toEqual([
      {
        code: 'E_PILOT_ENDED',
        count: 1,
        first: {
          uid: 'long',
          message: 'pilot pilot.0000 ended before the task finished: its runtime of 1 min ran out',
        },
      },
      {
        code: 'E_NO_PILOT_TIME',
        count: 1,
        first: {
          uid: 'wide',
          message:
            'task needs 5 s (walltimeS) and no pilot that can hold it has that long before it drains (pilot.0000: 4 s)',
        },
      },
    ]);
    expect(r.pilots[0]!.end_s).toBe(60);
    // the cut-off run counts as busy until the pilot ended
    expect(r.utilization.core).toBeCloseTo((60 + rows.short!.end_s!) / 120, 6);
    // the same when every notification is kept (for --timeline)
    const recorded = simulate(w, { jitter: 0.5, seed: 2 }, true);
    expect([...taskTimes(recorded)]).toEqual([...taskTimes(sim)]);
    expect(summarize(recorded)).toEqual(r);
  });

  it('a task that waits at a pilot until it can no longer end there in time starts on another one', () => {
    const w: Workload = {
      pilots: [local(1, { runtimeMin: 1 }), local(1, { runtimeMin: 10 })],
      tasks: [task('a', 40), task('b', 100), task('next', 30)],
    };
    const rows = Object.fromEntries([...taskTimes(simulate(w))].map((t) => [t.uid, t]));
    // queued behind 'a' on the 1-minute pilot, whose last start for it is at 30 s: given back
    // then, it runs on the other pilot once 'b' ends (no retry used: it has none)
    expect([rows.next!.start_s, rows.next!.end_s, rows.next!.state]).toEqual([100, 130, 'DONE']);
    expect(rows.next!.pilot).toBe(rows.b!.pilot);
    // the same when every notification is kept (for --timeline)
    expect([...taskTimes(simulate(w, {}, true))]).toEqual([...taskTimes(simulate(w))]);
  });

  it('simulates --nodes/--cores/--gpus instead of the workload pilots, and --default-walltime', () => {
    const w: Workload = {
      pilots: [local(1)],
      tasks: [{ executable: 'x' }, { executable: 'y', walltimeS: 2 }],
    };
    const sim = simulate(w, { nodes: 2, cores: 1, gpus: 0, defaultWalltimeS: 3 });
    expect([...taskTimes(sim)].map((t) => [t.uid, t.start_s, t.end_s])).toEqual([
      ['task.000000', 0, 3],
      ['task.000001', 0, 2],
    ]);
    expect(summarize(sim).pilots.map((p) => [p.nodes, p.cores])).toEqual([[2, 2]]);
  });

  it('refuses a task without a duration, naming it, and bad dependencies with their path', () => {
    const w: Workload = { tasks: [task('a', 1), { executable: 'x', name: 'prep' }] };
    expect(() => simulate(w, { nodes: 1, cores: 1 })).toThrow(UsageError);
    expect(() => simulate(w, { nodes: 1, cores: 1 })).toThrow(/\/tasks\/1 \(task.000000 'prep'\)/);
    const bad: Workload = { tasks: [task('a', 1, { after: ['nope'] })] };
    expect(() => simulate(bad, { nodes: 1, cores: 1 })).toThrow(ValidationError);
  });

  it("reports the same utilization as the profile's account of the same run", () => {
    const w: Workload = {
      pilots: [local(3, { gpus: 2, uid: 'a' }), local(2, { gpus: 1, uid: 'b' })],
      tasks: Array.from({ length: 40 }, (_, i) =>
        task(`t${i}`, 1 + (i % 7) * 0.5, {
          coresPerRank: 1 + (i % 2),
          ...(i % 5 === 0 ? { gpusPerRank: i % 10 === 0 ? 1 : 0.5 } : {}),
          priority: i % 3,
        }),
      ),
    };
    const sim = simulate(w, {}, true);
    const r = summarize(sim);
    const u = utilization(simProfile(sim));
    expect(u.all.check.ok).toBe(true);
    expect(r.utilization.core).toBeCloseTo(u.all.utilization!, 9);
    expect(r.utilization.gpu).toBeCloseTo(u.all.gpuUtilization!, 9);
    expect(r.counts.DONE).toBe(40);
  });

  it('gives the same result every time, and --jitter varies durations by the seed', () => {
    const w: Workload = {
      tasks: Array.from({ length: 200 }, (_, i) => task(`t${i}`, 1 + (i % 13))),
    };
    const run = (o: SimulateOptions): string => {
      const sim = simulate(w, { nodes: 3, cores: 4, ...o });
      return JSON.stringify([summarize(sim), [...taskTimes(sim)]]);
    };
    expect(run({})).toBe(run({}));
    expect(run({ jitter: 0.2, seed: 1 })).toBe(run({ jitter: 0.2, seed: 1 }));
    expect(run({ jitter: 0.2, seed: 1 })).not.toBe(run({ jitter: 0.2, seed: 2 }));
  });
});
