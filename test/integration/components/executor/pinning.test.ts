/**
 * Pinning each rank to its slot's CPUs (LaunchOptions.cpuIds): the rank wrapper of mpirun and
 * srun (taskset -p on itself, then exec), and fork tasks, which the C spawner helper pins around
 * posix_spawn (the Node helper cannot: its tasks run unpinned, PF_CPUS empty). Each task reads
 * its own Cpus_allowed_list from /proc/self/status.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { usableCpus } from '../../../../src/agent/resources/machine';
import {
  RANK_WRAPPER,
  SRUN_RANK_WRAPPER,
  cpuList,
} from '../../../../src/components/executor/launch';
import { ExecutorHarness, lines, type Slot } from '../../../support/executor-harness';
import { describeEachHelper, useHelperEnv } from './process/spawner-fixtures';

const HOST = os.hostname();
/** The CPUs this test may use: the tasks are pinned within them. */
const CPUS = usableCpus();
const LAST = CPUS[CPUS.length - 1]!;
const ALL = cpuList(CPUS);
/** A CPU id no machine here has: pinning to it fails. */
const MISSING = 4000;
const hasMpirun = (process.env.PATH ?? '')
  .split(':')
  .some((d) => d !== '' && fs.existsSync(`${d}/mpirun`));
const itMpi = hasMpirun ? it : it.skip;

/** Prints `allowed=<Cpus_allowed_list> pf=<PF_CPUS>` (one write: ranks print together). */
const SHOW =
  'a=$(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status); ' +
  'echo "rank=${PF_RANK} allowed=$a pf=${PF_CPUS-unset}"';

describe('the rank wrapper pins rank r to entry r of PF_RANK_CPUS (plain sh)', () => {
  /** What the rank prints, run as `sh -c WRAPPER pf-rank /bin/sh -c SHOW` with `env`. */
  function rankSees(wrapper: string, env: Record<string, string>): string {
    return execFileSync('/bin/sh', ['-c', wrapper, 'pf-rank', '/bin/sh', '-c', SHOW], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  }

  it('under mpirun and srun, to the entry of its own rank', () => {
    const table = `${CPUS[0]};${LAST}`;
    expect(rankSees(RANK_WRAPPER, { OMPI_COMM_WORLD_RANK: '1', PF_RANK_CPUS: table })).toBe(
      `rank=1 allowed=${LAST} pf=${LAST}\n`,
    );
    expect(rankSees(SRUN_RANK_WRAPPER, { SLURM_PROCID: '0', PF_RANK_CPUS: table })).toBe(
      `rank=0 allowed=${CPUS[0]} pf=${CPUS[0]}\n`,
    );
  });

  it('leaves a rank with an empty entry, or no table, unpinned', () => {
    expect(rankSees(SRUN_RANK_WRAPPER, { SLURM_PROCID: '1', PF_RANK_CPUS: `${LAST};` })).toBe(
      `rank=1 allowed=${ALL} pf=\n`,
    );
    expect(rankSees(SRUN_RANK_WRAPPER, { SLURM_PROCID: '0' })).toBe(`rank=0 allowed=${ALL} pf=\n`);
  });

  it('runs a rank it cannot pin unpinned, saying so on stderr', () => {
    const err = path.join(os.tmpdir(), `pf-pin-${process.pid}.err`);
    try {
      const out = execFileSync(
        '/bin/sh',
        [
          '-c',
          `exec 2>"${err}"; exec /bin/sh -c "$1" pf-rank /bin/sh -c "$2"`,
          'x',
          SRUN_RANK_WRAPPER,
          SHOW,
        ],
        {
          env: {
            PATH: process.env.PATH ?? '/usr/bin:/bin',
            SLURM_PROCID: '0',
            PF_RANK_CPUS: String(MISSING),
          },
          encoding: 'utf8',
        },
      );
      expect(out).toBe(`rank=0 allowed=${ALL} pf=\n`);
      expect(fs.readFileSync(err, 'utf8')).toContain(
        `pf-rank: rank 0 runs unpinned: taskset cannot pin it to CPUs ${MISSING}`,
      );
    } finally {
      fs.rmSync(err, { force: true });
    }
  });
});

describeEachHelper('tasks pinned to their slots by the Executor', (helper) => {
  useHelperEnv(helper);
  let dir: string;
  let h: ExecutorHarness | undefined;
  /** Core i of this host is its i-th usable CPU. */
  const cpuIds = new Map([[HOST, CPUS]]);
  const start = () =>
    ExecutorHarness.start(dir, {
      prefix: `pin-${helper}`,
      launch: { mpirun: 'mpirun', asRoot: process.getuid?.() === 0, cpuIds },
    });
  const slot = (cores: number[]): Slot => ({ node: HOST, cores, gpus: [] });

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-pinning-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  afterEach(async () => {
    await h?.pool.close();
    h = undefined;
  });

  it('forks a task pinned to the CPUs of its slot (the C helper; the Node one cannot)', async () => {
    h = await start();
    const one = h.task({ executable: '/bin/sh', arguments: ['-c', SHOW] }, [
      slot([CPUS.length - 1]),
    ]);
    const all = h.task({ executable: '/bin/sh', arguments: ['-c', SHOW] }, [
      slot(CPUS.map((_, i) => i)),
    ]);
    h.core.onTasks([one, all]);
    if (helper === 'native') {
      expect(await h.done(one)).toBe(`rank=0 allowed=${LAST} pf=${LAST}\n`);
    } else {
      expect(await h.done(one)).toBe(`rank=0 allowed=${ALL} pf=\n`);
    }
    expect(await h.done(all)).toBe(`rank=0 allowed=${ALL} pf=${helper === 'native' ? ALL : ''}\n`);
  });

  it('forks a task it cannot pin unpinned, saying so on its stderr', async () => {
    h = await ExecutorHarness.start(dir, {
      prefix: `pin-${helper}-missing`,
      launch: { mpirun: 'mpirun', asRoot: false, cpuIds: new Map([[HOST, [MISSING]]]) },
    });
    const t = h.task({ executable: '/bin/sh', arguments: ['-c', SHOW] }, [slot([0])]);
    h.core.onTasks([t]);
    expect(await h.done(t)).toBe(
      `rank=0 allowed=${ALL} pf=${helper === 'native' ? MISSING : ''}\n`,
    );
    if (helper === 'native') {
      expect(fs.readFileSync(`${t.sandbox!}/stderr`, 'utf8')).toBe(
        `pf-spawner: runs unpinned: cannot pin to CPUs ${MISSING}\n`,
      );
    }
  });

  itMpi('pins each rank under mpirun to the CPUs of its own slot', async () => {
    h = await start();
    const t = h.task({ ranks: 2, executable: '/bin/sh', arguments: ['-c', SHOW] }, [
      slot([CPUS.length - 1]),
      slot([0]),
    ]);
    h.core.onTasks([t]);
    expect(lines(await h.done(t))).toEqual([
      `rank=0 allowed=${LAST} pf=${LAST}`,
      `rank=1 allowed=${CPUS[0]} pf=${CPUS[0]}`,
    ]);
  });
});
