import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { RANK_WRAPPER } from '../../../../src/components/executor/launch';
import type { TaskDescription } from '../../../../src/generated';
import { ExecutorHarness, lines, type Slot } from '../../../support/executor-harness';
import { describeEachHelper, useHelperEnv } from './process/spawner-fixtures';
import { cleanupFifos, fifo } from '../../../support/fifo';

const HOST = os.hostname();

function onPath(name: string): boolean {
  return (process.env.PATH ?? '').split(':').some((d) => d !== '' && fs.existsSync(`${d}/${name}`));
}

const hasMpirun = onPath('mpirun');
const asRoot = process.getuid?.() === 0;
/** Fake remote nodes need a private UTS namespace per node: root and unshare. */
const canFakeNodes = hasMpirun && asRoot && onPath('unshare');
const it_ = hasMpirun ? it : it.skip;
const itNodes = canFakeNodes ? it : it.skip;
const SKIPPED = hasMpirun
  ? ''
  : ' (skipped: mpirun not installed; run scripts/system-deps.sh as root)';
const SKIPPED_NODES = canFakeNodes
  ? ''
  : ' (skipped: needs mpirun, root and unshare; run scripts/system-deps.sh as root)';

function slot(cores: number[], gpus: number[] = [], node = HOST): Slot {
  return { node, cores, gpus };
}

/** ExecutorCore + SpawnerPool launching with the machine's mpirun. */
const Harness = {
  start: (dir: string) =>
    ExecutorHarness.start(dir, { prefix: 'mpi', launch: { mpirun: 'mpirun', asRoot } }),
};

describe('the rank wrapper (plain sh, no mpirun)', () => {
  /** Runs the wrapper as mpirun would for rank `rank`, printing what the rank sees. */
  function rankSees(rank: number, table: string | undefined, args: string[] = []): string {
    const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
    env.OMPI_COMM_WORLD_RANK = String(rank);
    if (table !== undefined) env.PF_RANK_GPUS = table;
    const show =
      'printf "%s|" "$PF_RANK" "${PF_GPUS-unset}" "${CUDA_VISIBLE_DEVICES-unset}" ' +
      '"${PF_RANK_GPUS-unset}" "$@"';
    return execFileSync(
      '/bin/sh',
      ['-c', RANK_WRAPPER, 'pf-rank', '/bin/sh', '-c', show, 'x', ...args],
      {
        env,
        encoding: 'utf8',
      },
    );
  }

  it('gives each rank its own entry of the GPU table, empty when it has none', () => {
    const table = '0,1;;2,3;7';
    expect([0, 1, 2, 3].map((r) => rankSees(r, table))).toEqual([
      '0|0,1|0,1|unset|',
      '1|||unset|',
      '2|2,3|2,3|unset|',
      '3|7|7|unset|',
    ]);
    expect(rankSees(0, '')).toBe('0|||unset|');
    expect(rankSees(1, ';')).toBe('1|||unset|');
  });

  it('passes arguments with spaces, quotes, globs and dollars through untouched', () => {
    const args = ['a b', `it's "quoted"`, '$HOME', '*', '', 'x\ny'];
    expect(rankSees(0, '', args)).toBe(`0|||unset|${args.join('|')}|`);
  });

  it('refuses to run outside mpirun', () => {
    expect(() =>
      execFileSync('/bin/sh', ['-c', RANK_WRAPPER, 'pf-rank', '/bin/true'], {
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
        stdio: ['ignore', 'ignore', 'pipe'],
      }),
    ).toThrow(/not started by mpirun/);
  });
});

describeEachHelper(`ExecutorCore + SpawnerPool + real mpirun${SKIPPED}`, (helper) => {
  useHelperEnv(helper);
  let dir: string;
  let h: ExecutorHarness | undefined;

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-mpirun-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  afterEach(async () => {
    await h?.pool.close();
    h = undefined;
    cleanupFifos();
  });

  const SHOW = 'echo rank=$PF_RANK of $PF_RANKS on $(hostname) gpus=$CUDA_VISIBLE_DEVICES';

  it_('two 2-rank MPI tasks under mpirun print their ranks', async () => {
    h = await Harness.start(dir);
    const desc: TaskDescription = { ranks: 2, executable: '/bin/sh', arguments: ['-c', SHOW] };
    // Cores 2 and 3 do not exist on a 2-core machine: placement must not bind to them.
    const a = h.task(desc, [slot([0]), slot([1])]);
    const b = h.task(desc, [slot([2]), slot([3])]);
    h.core.onTasks([a, b]);
    const [outA, outB] = await Promise.all([h.done(a), h.done(b)]);
    for (const [t, out] of [
      [a, outA],
      [b, outB],
    ] as const) {
      expect(t.state).toBe('AGENT_STAGING_OUTPUT_PENDING');
      expect(t.exitCode).toBe(0);
      expect(lines(out)).toEqual([`rank=0 of 2 on ${HOST} gpus=`, `rank=1 of 2 on ${HOST} gpus=`]);
      expect(fs.readFileSync(`${t.sandbox!}/mpi-hostfile`, 'utf8')).toContain(
        `\n${HOST}\n${HOST}\n`,
      );
    }
  });

  it_('gives each rank the GPUs of its own slot, and a fork task those of its slot', async () => {
    h = await Harness.start(dir);
    const show = (name: string): TaskDescription => ({
      executable: '/bin/sh',
      arguments: ['-c', `echo "${name}$PF_RANK cvd=\${CUDA_VISIBLE_DEVICES-unset} pf=$PF_GPUS"`],
    });
    const mpi = h.task({ ...show('mpi'), ranks: 2 }, [slot([0], [0, 1]), slot([1], [2, 3])]);
    const one = h.task(show('one'), [slot([2], [3])]);
    const none = h.task(show('none'), [slot([3])]);
    h.core.onTasks([mpi, one, none]);
    expect(lines(await h.done(mpi))).toEqual(['mpi0 cvd=0,1 pf=0,1', 'mpi1 cvd=2,3 pf=2,3']);
    expect(await h.done(one)).toBe('one0 cvd=3 pf=3\n');
    expect(await h.done(none)).toBe('none0 cvd= pf=\n');
  });

  it_('hands arguments with spaces and quotes to every rank unchanged', async () => {
    h = await Harness.start(dir);
    const args = ['a b', `it's "quoted"`, '$HOME', '*', ''];
    const t = h.task(
      {
        ranks: 2,
        executable: '/bin/sh',
        // One write per rank: mpirun interleaves the ranks' output at write boundaries.
        arguments: ['-c', 'line=$(printf "%s|" "$PF_RANK" "$@"); echo "$line"', 'x', ...args],
        environment: { GREETING: 'hello world' },
      },
      [slot([0]), slot([1])],
    );
    h.core.onTasks([t]);
    expect(lines(await h.done(t))).toEqual([0, 1].map((r) => `${r}|${args.join('|')}|`));
  });

  it_('reports a rank that fails as a non-zero exit of the task', async () => {
    h = await Harness.start(dir);
    const t = h.task(
      { ranks: 2, executable: '/bin/sh', arguments: ['-c', 'exit $((3 + PF_RANK))'] },
      [slot([0]), slot([1])],
    );
    h.core.onTasks([t]);
    await h.done(t);
    expect(t.state).toBe('AGENT_STAGING_OUTPUT_PENDING');
    expect(t.exitCode).not.toBe(0);
  });

  it_('cancels a running MPI task: SIGTERM reaches every rank', async () => {
    h = await Harness.start(dir);
    const out = fifo(path.join(dir, 'cancel.fifo'));
    const t = h.task(
      {
        ranks: 2,
        executable: '/bin/sh',
        arguments: ['-c', 'exec >"$FIFO"; echo "up $PF_RANK"; exec sleep 30'],
        environment: { FIFO: path.join(dir, 'cancel.fifo') },
      },
      [slot([0]), slot([1])],
    );
    h.core.onTasks([t]);
    expect(lines(await out.text(2))).toEqual(['up 0', 'up 1']);
    h.core.onCancel([t.uid]);
    await h.done(t);
    expect(t.state).toBe('CANCELED');
    await out.gone();
  });

  it_('leaves no rank behind when the agent shuts down (SIGKILL to mpirun)', async () => {
    h = await Harness.start(dir);
    const out = fifo(path.join(dir, 'kill.fifo'));
    const t = h.task(
      {
        ranks: 2,
        executable: '/bin/sh',
        // Ranks ignore SIGTERM; mpirun puts each in a process group of its own.
        arguments: ['-c', 'trap "" TERM; exec >"$FIFO"; echo "up $PF_RANK"; exec sleep 30'],
        environment: { FIFO: path.join(dir, 'kill.fifo') },
      },
      [slot([0]), slot([1])],
    );
    h.core.onTasks([t]);
    expect(lines(await out.text(2))).toEqual(['up 0', 'up 1']);
    h.core.onShutdown('FAILED', { code: 'E_PILOT_ENDED', message: 'bye', component: 'Agent' });
    expect(t.state).toBe('FAILED');
    await out.gone();
  });
});

describe(`mpirun places rank i on the node of slot i${SKIPPED_NODES}`, () => {
  let dir: string;
  let h: ExecutorHarness | undefined;

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-mpinodes-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  afterEach(async () => {
    await h?.pool.close();
    h = undefined;
  });

  itNodes('runs ranks on fake nodes as the slots say, with the variables exported', async () => {
    // A stand-in for ssh: runs the remote command here, in a clean environment (as sshd would
    // give) and a private UTS namespace whose hostname is the target node.
    const fakeSsh = path.join(dir, 'fake-ssh');
    fs.writeFileSync(
      fakeSsh,
      [
        '#!/bin/sh',
        'while [ $# -gt 0 ]; do case "$1" in -o|-l|-p) shift 2;; -*) shift;; *) break;; esac; done',
        'host=$1; shift',
        'exec env -i PATH="$PATH" PILOTFISH_TEST_MARK="${PILOTFISH_TEST_MARK-}" \\',
        '  unshare --uts /bin/sh -c \'hostname "$0" && exec /bin/sh -c "$1"\' "$host" "$*"',
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    h = await Harness.start(dir);
    const t = h.task(
      {
        ranks: 4,
        executable: '/bin/sh',
        arguments: ['-c', 'echo "$PF_RANK/$PF_RANKS $(hostname) gpus=$PF_GPUS $FOO"'],
        environment: { FOO: 'foo bar', OMPI_MCA_plm_rsh_agent: fakeSsh },
      },
      [
        slot([0], [0], 'pf-node-a'),
        slot([0], [1], 'pf-node-b'),
        slot([1], [2], 'pf-node-a'),
        slot([0], [3], HOST),
      ],
    );
    h.core.onTasks([t]);
    const out = await h.done(t);
    expect(t.exitCode).toBe(0);
    expect(lines(out)).toEqual([
      '0/4 pf-node-a gpus=0 foo bar',
      '1/4 pf-node-b gpus=1 foo bar',
      '2/4 pf-node-a gpus=2 foo bar',
      `3/4 ${HOST} gpus=3 foo bar`,
    ]);
  });
});
