/**
 * The seeded mixed workload `mixed-v1` of the scheduler and simulate benchmarks, and their pilot
 * nodes (56 cores, 8 GPUs, 512,000 MiB each):
 *   50%  1 core
 *   15%  4 cores
 *   10%  1 whole GPU + 8 cores
 *   10%  0.25 GPU + 2 cores (a shared GPU)
 *    5%  2 GPUs + 16 cores + 64 GiB
 *    5%  4 ranks x 14 cores, launch mpirun (may span nodes)
 *    3%  2 cores, tags.colocate 'c<k>' (groups of about 10 tasks)
 *    2%  1 core, priority 10
 * With `walltime`, each task also declares walltimeS, whole seconds drawn uniformly from 60 to
 * 599 by a PRNG of its own (so the mix is the same with and without).
 */
import type { NodeResources } from '../src/components/agent-scheduler/node-state';
import type { TaskDescription } from '../src/generated';
import { mulberry32 } from './harness';

export const NODE = { cores: 56, gpus: 8, memMb: 512_000 } as const;
export const SEED = 0x5eed;
export const WORKLOAD = 'mixed-v1';

interface Shape {
  share: number;
  describe(k: number): Omit<TaskDescription, 'executable'>;
}

/** The mix of `mixed-v1`; `k` picks a colocation group. */
const MIX: readonly Shape[] = [
  { share: 0.5, describe: () => ({ coresPerRank: 1 }) },
  { share: 0.15, describe: () => ({ coresPerRank: 4 }) },
  { share: 0.1, describe: () => ({ coresPerRank: 8, gpusPerRank: 1 }) },
  { share: 0.1, describe: () => ({ coresPerRank: 2, gpusPerRank: 0.25 }) },
  { share: 0.05, describe: () => ({ coresPerRank: 16, gpusPerRank: 2, memPerRankMb: 65_536 }) },
  { share: 0.05, describe: () => ({ ranks: 4, coresPerRank: 14, launch: 'mpirun' }) },
  { share: 0.03, describe: (k) => ({ coresPerRank: 2, tags: { colocate: `c${k}` } }) },
  { share: 0.02, describe: () => ({ coresPerRank: 1, priority: 10 }) },
];

/**
 * The same `n` task descriptions every time (seeded). Descriptions that are alike are one
 * object (a million tasks of a few thousand kinds), as a client may share them too.
 */
export function mixedDescriptions(n: number, walltime = false): TaskDescription[] {
  const rng = mulberry32(SEED);
  const durations = mulberry32(SEED ^ 0x7a11);
  const groups = Math.max(1, Math.round((n * 0.03) / 10));
  const shared = new Map<string, TaskDescription>();
  const out: TaskDescription[] = [];
  for (let i = 0; i < n; i++) {
    const x = rng();
    let s = MIX.length - 1;
    let acc = 0;
    for (let j = 0; j < MIX.length; j++) {
      acc += MIX[j]!.share;
      if (x < acc) {
        s = j;
        break;
      }
    }
    const k = Math.floor(rng() * groups);
    const w = walltime ? 60 + Math.floor(durations() * 540) : 0;
    const key = `${s}/${MIX[s]!.describe(k).tags === undefined ? 0 : k}/${w}`;
    let d = shared.get(key);
    if (d === undefined) {
      d = {
        executable: '/bin/true',
        ...MIX[s]!.describe(k),
        ...(walltime ? { walltimeS: w } : {}),
      };
      shared.set(key, d);
    }
    out.push(d);
  }
  return out;
}

/** `n` nodes of NODE, named n0000, ... */
export function mixedNodes(n: number): NodeResources[] {
  const width = String(n - 1).length;
  return Array.from({ length: n }, (_, i) => ({
    name: `n${String(i).padStart(width, '0')}`,
    ...NODE,
  }));
}
