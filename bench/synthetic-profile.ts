import { mulberry32 } from '../src/lib/prng';
import type { AttemptProfile, Profile, TaskProfile } from '../src/profile/types';

export interface SyntheticOptions {
  tasks: number;
  /** Cores (and GPUs) of each node of the one pilot. */
  nodes: { cores: number; gpus: number }[];
  seed?: number;
  /** Widths in cores (1..maxWidth) and durations in seconds (minS..maxS). */
  maxWidth?: number;
  minS?: number;
  maxS?: number;
  /** Every n-th task takes one GPU (0: none). */
  gpuEvery?: number;
  /** Every n-th task fails (0: none). */
  failEvery?: number;
}

/**
 * A profile of one pilot that ran `tasks` tasks of mixed widths and durations, placed by a
 * greedy list scheduler on the earliest free cores (seeded: the same options give the same
 * profile). For benchmarks and tests of the views; the instants are made up, the shape is real.
 */
export function syntheticProfile(o: SyntheticOptions): Profile {
  const rnd = mulberry32(o.seed ?? 1);
  const t0 = 1_700_000_000_000;
  const maxWidth = o.maxWidth ?? 4;
  const minMs = (o.minS ?? 0.2) * 1000;
  const maxMs = (o.maxS ?? 2) * 1000;
  const active = t0 + 1500;
  const free = o.nodes.map((n) => new Float64Array(n.cores).fill(active));
  const gpuFree = o.nodes.map((n) => new Float64Array(n.gpus).fill(active));
  const tasks: TaskProfile[] = [];
  let last = active;
  for (let i = 0; i < o.tasks; i++) {
    const node = i % o.nodes.length;
    const cores = free[node]!;
    const width = Math.min(cores.length, 1 + Math.floor(rnd() * maxWidth));
    const order = Array.from(cores.keys()).sort((a, b) => cores[a]! - cores[b]!);
    const picked = order.slice(0, width);
    const gpu = o.gpuEvery && gpuFree[node]!.length > 0 && i % o.gpuEvery === 0;
    const g = gpu ? gpuFree[node]!.indexOf(Math.min(...gpuFree[node]!)) : -1;
    let ready = Math.max(...picked.map((c) => cores[c]!));
    if (g >= 0) ready = Math.max(ready, gpuFree[node]![g]!);
    const wait = active + (i / o.tasks) * 50; // submitted in a stream over 50 ms
    const alloc = Math.max(ready, wait) + 0.2 + rnd() * 0.5;
    const exec = alloc + 0.1 + rnd() * 0.3;
    const launched = exec + 1 + rnd() * 3;
    const exited = launched + minMs + rnd() * (maxMs - minMs);
    const release = exited + 0.5 + rnd() * 2;
    const end = release + 1 + rnd() * 5;
    for (const c of picked) cores[c] = release;
    if (g >= 0) gpuFree[node]![g] = release;
    last = Math.max(last, end);
    const failed = o.failEvery !== undefined && o.failEvery > 0 && i % o.failEvery === 0;
    const final = failed ? 'FAILED' : 'DONE';
    const a: AttemptProfile = {
      attempt: 1,
      pilot: 'pilot.0000',
      states: [
        { state: 'NEW', ts: t0 + 100 },
        { state: 'AGENT_SCHEDULING_PENDING', ts: wait },
        { state: 'AGENT_EXECUTING_PENDING', ts: alloc },
        { state: 'AGENT_EXECUTING', ts: exec },
        { state: 'AGENT_STAGING_OUTPUT_PENDING', ts: release },
        { state: final, ts: end },
      ],
      final,
      slots: [
        { node: `node${node}`, cores: picked.sort((a, b) => a - b), gpus: g >= 0 ? [g] : [] },
      ],
      launched,
      exited,
      exitCode: failed ? 1 : 0,
    };
    if (failed) {
      a.reason = { code: 'E_EXIT_CODE', message: 'task exited with code 1', component: 'Executor' };
    }
    tasks.push({
      uid: `task.${String(i).padStart(6, '0')}`,
      name: `t${i % 97}`,
      mode: 'executable',
      attempts: [a],
    });
  }
  const end = last + 300;
  return {
    session: 'pf.synthetic',
    readAt: end + 1000,
    pilots: [
      {
        uid: 'pilot.0000',
        resource: 'local',
        states: [
          { state: 'NEW', ts: t0 },
          { state: 'PMGR_LAUNCHING_PENDING', ts: t0 + 10 },
          { state: 'PMGR_LAUNCHING', ts: t0 + 20 },
          { state: 'PMGR_ACTIVE_PENDING', ts: t0 + 400 },
          { state: 'PMGR_ACTIVE', ts: active },
          { state: 'DONE', ts: end },
        ],
        final: 'DONE',
        nodes: o.nodes.map((n, i) => ({ name: `node${i}`, ...n })),
        jobStarted: t0 + 300,
        drainStarted: last + 50,
      },
    ],
    tasks,
  };
}
