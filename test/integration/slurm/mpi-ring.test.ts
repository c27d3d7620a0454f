import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseCpuList, usableCpus } from '../../../src/agent/resources/machine';
import type { Task } from '../../../src/client/task';
import { SLURM_SKIPPED, slurmEnv } from '../../support/slurm';
import { fixtures } from '../../support/session-fixture';

// A real MPI program (OpenMPI from Debian, compiled here with mpicc) run by a 2-node Slurm pilot
// of the lab cluster (scripts/slurm-up.sh: n1, n2 of PILOTFISH_SLURM_CPUS_PER_NODE CPUs each)
// with the default launch: srun, with the PMI plug-in the agent picked (PMIx for OpenMPI).
// The agent is the built one (dist/): run `npm run build` first.

const CPUS_PER_NODE = Number(process.env.PILOTFISH_SLURM_CPUS_PER_NODE || 2);

/**
 * A token ring: rank 0 sends 1 to rank 1, each rank adds 1 and passes it on, rank 0 gets
 * `size` back. Each rank prints its host, Cpus_allowed_list, PF_CPUS and OMP_NUM_THREADS.
 */
const RING_C = String.raw`
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void allowed(char *out, size_t n) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[4096];
  snprintf(out, n, "?");
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "Cpus_allowed_list:", 18) == 0) {
      sscanf(line + 18, "%255s", out);
      break;
    }
  }
  if (f != NULL) fclose(f);
}

int main(int argc, char **argv) {
  int rank, size, token = 0;
  char host[256], cpus[256];
  /* before MPI_Init, so the runtime's own threads cannot change what the rank was given */
  allowed(cpus, sizeof cpus);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  gethostname(host, sizeof host);
  if (size > 1) {
    if (rank == 0) {
      token = 1;
      MPI_Send(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(&token, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(&token, 1, MPI_INT, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      token++;
      MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
    }
  }
  const char *pf = getenv("PF_CPUS"), *omp = getenv("OMP_NUM_THREADS");
  printf("rank=%d size=%d host=%s allowed=%s pf_cpus=%s omp=%s token=%d\n", rank, size, host,
         cpus, pf ? pf : "-", omp ? omp : "-", token);
  MPI_Finalize();
  return 0;
}
`;

interface RankLine {
  rank: number;
  size: number;
  host: string;
  allowed: string;
  pfCpus: string;
  omp: string;
  token: number;
}

const RANK_LINE =
  /^rank=(\d+) size=(\d+) host=(\S+) allowed=(\S+) pf_cpus=(\S*) omp=(\S+) token=(\d+)$/;

function rankLines(t: Task): RankLine[] {
  const lines = (t.stdout ?? '').trim().split('\n');
  return lines
    .map((l) => {
      const m = RANK_LINE.exec(l);
      if (!m) {
        throw new Error(`unexpected line '${l}' in stdout:\n${t.stdout}\nstderr:\n${t.stderr}`);
      }
      return {
        rank: Number(m[1]),
        size: Number(m[2]),
        host: m[3]!,
        allowed: m[4]!,
        pfCpus: m[5]!,
        omp: m[6]!,
        token: Number(m[7]),
      };
    })
    .sort((a, b) => a.rank - b.rank);
}

/** The hostfile line of each rank: the node of its slot (the task's sandbox keeps it). */
function slotNodes(t: Task): string[] {
  const text = fs.readFileSync(path.join(t.sandbox!, 'slurm-hostfile'), 'utf8');
  return text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
}

/** mpicc compiling a program that includes mpi.h (scripts/system-deps.sh installs it). */
function mpiccWorks(dir: string): boolean {
  const src = path.join(dir, 'probe.c');
  fs.writeFileSync(src, '#include <mpi.h>\nint main(void) { return 0; }\n');
  const r = spawnSync('mpicc', ['-o', path.join(dir, 'probe'), src], { encoding: 'utf8' });
  return r.status === 0;
}

const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-mpi-ring-'));
const cluster = slurmEnv();
const skipped =
  cluster === undefined
    ? SLURM_SKIPPED
    : mpiccWorks(workDir)
      ? ''
      : ' (skipped: mpicc cannot compile an MPI program; run scripts/system-deps.sh as root)';
const describeRing = skipped === '' ? describe : describe.skip;

describeRing(`an MPI token ring on a 2-node Slurm pilot${skipped}`, () => {
  const fixture = fixtures();
  let ring: string;
  // the lab's fake nodes are this host: pinning maps a slot's core i to the host's i-th CPU
  const hostCpus = usableCpus();
  const pinned = CPUS_PER_NODE <= hostCpus.length;

  beforeAll(() => {
    const src = path.join(workDir, 'ring.c');
    ring = path.join(workDir, 'ring');
    fs.writeFileSync(src, RING_C);
    const cc = spawnSync('mpicc', ['-O1', '-o', ring, src], { encoding: 'utf8' });
    if (cc.status !== 0) throw new Error(`mpicc failed: ${cc.stderr}`);
  });

  afterAll(() => {
    fs.rmSync(workDir, { recursive: true, force: true });
  });

  it('passes the token around 4 ranks started by the default launch, each pinned to its slot', async () => {
    Object.assign(process.env, cluster);
    const fx = await fixture.open({ resource: 'slurm', nodes: 2, runtimeMin: 5 });
    await fx.pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 60_000 });
    const [four, wide, plain] = await fx.tmgr.submitTasks([
      { ranks: 4, executable: ring },
      { ranks: 2, coresPerRank: 2, executable: ring },
      // the task's own SLURM_MPI_TYPE wins over the pilot's choice: without PMI OpenMPI fails
      { ranks: 2, executable: ring, environment: { SLURM_MPI_TYPE: 'none' } },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 120_000 });

    // the agent chose PMIx for Debian's OpenMPI, and said so once
    const agentLog = fs.readFileSync(path.join(fx.pilot.sandbox, 'agent.log'), 'utf8');
    const choices = agentLog.split('\n').filter((l) => l.includes('srun mpi plug-in'));
    expect(choices).toHaveLength(1);
    expect(JSON.parse(choices[0]!)).toMatchObject({ mpi: 'pmix' });

    expect(four!.reason).toBeUndefined();
    expect(four!.state).toBe('DONE');
    process.stderr.write(`mpi ring, 4 ranks:\n${four!.stdout ?? ''}`);
    const ranks = rankLines(four!);
    expect(ranks.map((r) => r.rank)).toEqual([0, 1, 2, 3]);
    expect(ranks[0]!.token).toBe(4); // 1, then +1 at ranks 1, 2 and 3
    expect(ranks.map((r) => r.omp)).toEqual(['1', '1', '1', '1']);
    // rank i runs on the node of slot i, both nodes used
    const nodes = slotNodes(four!);
    expect(ranks.map((r) => r.host)).toEqual(nodes);
    // both nodes of the pilot (the lab has more: which two depends on what else runs)
    const held = fx.pilot.nodes.map((n) => n.name);
    expect(held).toHaveLength(2);
    expect(new Set(nodes)).toEqual(new Set(held));
    for (const r of ranks) {
      if (!pinned) {
        expect(r.pfCpus).toBe('');
        continue;
      }
      // pinned to its slot's one core, and PF_CPUS names it
      expect(r.pfCpus).not.toBe('');
      expect(r.allowed).toBe(r.pfCpus);
      expect(parseCpuList(r.allowed)).toHaveLength(1);
    }
    if (pinned) {
      // the two ranks of a node hold different cores
      for (const n of held) {
        const mine = ranks.filter((r) => r.host === n).map((r) => r.allowed);
        expect(new Set(mine).size).toBe(mine.length);
      }
    }

    expect(wide!.reason).toBeUndefined();
    expect(wide!.state).toBe('DONE');
    const two = rankLines(wide!);
    expect(two.map((r) => [r.rank, r.token, r.omp])).toEqual([
      [0, 2, '2'],
      [1, 2, '2'],
    ]);
    if (pinned) {
      // two cores per rank: each rank on a node of its own, pinned to that node's 2 cores
      for (const r of two) {
        expect(r.allowed).toBe(r.pfCpus);
        expect(parseCpuList(r.allowed)).toHaveLength(2);
      }
    }

    expect(plain!.state).toBe('FAILED');
    expect(plain!.stderr).toContain("OMPI was not built with SLURM's PMI support");
  }, 240_000);
  it("takes the pilot's agent.mpi as given, and warns once when srun's steps fail with it", async () => {
    Object.assign(process.env, cluster);
    const fx = await fixture.open({
      resource: 'slurm',
      nodes: 1,
      runtimeMin: 5,
      agent: { mpi: 'pmix_v9' },
    });
    await fx.pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 60_000 });
    const log = fs
      .readFileSync(path.join(fx.pilot.sandbox, 'agent.log'), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const choice = log.filter((e) => e.message === 'srun mpi plug-in');
    expect(choice).toHaveLength(1);
    expect(choice[0]).toMatchObject({ mpi: 'pmix_v9', why: 'asked by the pilot (agent.mpi)' });
    const warned = log.filter((e) => e.message === 'MPI programs started by srun may fail');
    expect(warned).toHaveLength(1);
    expect(warned[0]!.warning).toContain(
      "agent.mpi 'pmix_v9' is not a plug-in srun offers here (pmix, none",
    );
    // and the one-rank step that tried it failed, as every step of this pilot would
    expect(warned[0]!.warning).toContain('a step with srun --mpi=pmix_v9 fails here');
  }, 90_000);
});
