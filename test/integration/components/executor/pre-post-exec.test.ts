/**
 * preExec and postExec through the real Executor and spawner helpers: the lines run in the shell
 * that starts the executable (what they export reaches it), the executable's argv arrives byte
 * for byte, and which part failed is read back from the status file the shell writes
 * (launch/steps.ts). Forked tasks with each helper; per rank under the machine's mpirun.
 */
import { afterAll, afterEach, beforeAll, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TaskDescription, TaskRecord } from '../../../../src/generated';
import { ExecutorHarness, lines, type Slot } from '../../../support/executor-harness';
import { cleanupFifos, fifo } from '../../../support/fifo';
import { describeEachHelper, useHelperEnv } from './process/spawner-fixtures';

const HOST = os.hostname();
const hasMpirun = (process.env.PATH ?? '')
  .split(':')
  .some((d) => d !== '' && fs.existsSync(`${d}/mpirun`));
const itMpi = hasMpirun ? it : it.skip;

/** Arguments a re-quoting bug would mangle. */
const AWKWARD = ['a b', `it's "quoted"`, '$HOME', '`id`', '*', '', 'x\ny', '\\n', '-e', ' '];

function slot(cores: number[]): Slot {
  return { node: HOST, cores, gpus: [] };
}

describeEachHelper('preExec and postExec', (helper) => {
  useHelperEnv(helper);
  let dir: string;
  let h: ExecutorHarness | undefined;

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-prepost-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  afterEach(async () => {
    await h?.pool.close();
    h = undefined;
    cleanupFifos();
  });

  /** Runs one forked task to its exit: its stdout, stderr and the files in its sandbox. */
  async function run(desc: TaskDescription): Promise<{ t: TaskRecord; out: string }> {
    h ??= await ExecutorHarness.start(dir, { prefix: `pp-${helper}`, launch: {} });
    const t = h.task(desc, [slot([0])]);
    h.core.onTasks([t]);
    const out = await h.done(t);
    return { t, out };
  }

  const marker = (t: TaskRecord, name: string) => fs.existsSync(path.join(t.sandbox!, name));

  it('runs preExec in the executable’s shell, and hands it its argv byte for byte', async () => {
    const { t, out } = await run({
      executable: '/bin/sh',
      arguments: ['-c', 'printf "[%s]" "$FOO" "$PWD" "$@"', 'x', ...AWKWARD],
      preExec: ['export FOO="set by preExec"', 'set -- clobbered', 'mkdir sub && cd sub'],
      postExec: ['echo "post sees $FOO"'],
    });
    expect(t.state).toBe('AGENT_STAGING_OUTPUT_PENDING');
    expect(t.exitCode).toBe(0);
    expect(t.reason).toBeUndefined();
    const shown = ['set by preExec', `${t.sandbox!}/sub`, ...AWKWARD].map((a) => `[${a}]`);
    expect(out).toBe(`${shown.join('')}post sees set by preExec\n`);
  });

  it('sources a file with `source` (dash has none) and `.`', async () => {
    const { t, out } = await run({
      executable: '/bin/sh',
      arguments: ['-c', 'echo "$A $B"'],
      preExec: [
        'printf "export A=1\\n" > a.sh; printf "export B=2\\n" > b.sh',
        'source ./a.sh',
        '. ./b.sh',
      ],
    });
    expect([t.exitCode, out]).toEqual([0, '1 2\n']);
  });

  it('fails a task whose preExec line fails with E_PRE_EXEC; the executable never runs', async () => {
    const { t } = await run({
      executable: '/bin/touch',
      arguments: ['ran'],
      preExec: ['touch pre0', 'echo about to fail >&2; exit 4', 'touch pre2'],
      postExec: ['touch post'],
    });
    expect(t.exitCode).toBe(4);
    expect(t.reason).toEqual({
      code: 'E_PRE_EXEC',
      message:
        "preExec[1] 'echo about to fail >&2; exit 4' failed with exit code 4: the executable did not run",
      component: 'Executor',
      detail: { exitCode: 4, preExec: 1, line: 'echo about to fail >&2; exit 4' },
    });
    expect(['pre0', 'pre2', 'ran', 'post'].map((m) => marker(t, m))).toEqual([
      true,
      false,
      false,
      false,
    ]);
    expect(fs.readFileSync(`${t.sandbox!}/stderr`, 'utf8')).toBe('about to fail\n');
  });

  it('runs postExec after a failing executable and keeps its exit code (no reason)', async () => {
    const { t, out } = await run({
      executable: '/bin/sh',
      arguments: ['-c', 'echo exe; exit 3'],
      preExec: ['true'],
      postExec: ['touch post; echo post'],
    });
    expect([t.exitCode, t.signal, t.reason]).toEqual([3, null, undefined]);
    expect(marker(t, 'post')).toBe(true);
    expect(out).toBe('exe\npost\n');
  });

  it('fails a task whose postExec line fails with E_POST_EXEC, after the executable ran', async () => {
    const { t } = await run({
      executable: '/bin/touch',
      arguments: ['ran'],
      postExec: ['touch post0', 'test -e nothing-here', 'touch post2'],
    });
    expect(t.exitCode).toBe(1);
    expect(t.reason).toMatchObject({
      code: 'E_POST_EXEC',
      message: "postExec[1] 'test -e nothing-here' failed with exit code 1",
    });
    expect(['ran', 'post0', 'post2'].map((m) => marker(t, m))).toEqual([true, true, false]);
  });

  it('tells a missing executable from one that exits 127', async () => {
    const missing = await run({ executable: '/no/such/app', postExec: ['touch post'] });
    expect(missing.t.reason).toMatchObject({
      code: 'E_EXEC_NOT_FOUND',
      message: "cannot execute '/no/such/app': not found (the shell's exec exited 127)",
    });
    expect(marker(missing.t, 'post')).toBe(true);
    const alsoMissing = await run({ executable: '/no/such/app', preExec: ['true'] });
    expect(alsoMissing.t.reason?.code).toBe('E_EXEC_NOT_FOUND');
    const exits = await run({
      executable: '/bin/sh',
      arguments: ['-c', 'exit 127'],
      preExec: ['true'],
    });
    expect([exits.t.exitCode, exits.t.reason]).toEqual([127, undefined]);
  });

  it('kills a preExec line that runs on at a cancel, with everything it started', async () => {
    h ??= await ExecutorHarness.start(dir, { prefix: `pp-${helper}`, launch: {} });
    const file = path.join(dir, `cancel-${helper}.fifo`);
    const out = fifo(file);
    const t = h.task(
      {
        executable: '/bin/touch',
        arguments: ['ran'],
        preExec: ['exec >"$FIFO"; echo up; sleep 30 & wait'],
        postExec: ['touch post'],
        environment: { FIFO: file },
      },
      [slot([0])],
    );
    h.core.onTasks([t]);
    expect(await out.lines(1)).toEqual(['up']);
    h.core.onCancel([t.uid]);
    await h.done(t);
    expect(t.state).toBe('CANCELED');
    await out.gone(); // the shell and its sleep have closed the FIFO: both are gone
    expect([marker(t, 'ran'), marker(t, 'post')]).toEqual([false, false]);
  });

  itMpi('runs the lines in every rank under mpirun, naming the rank that failed', async () => {
    h ??= await ExecutorHarness.start(dir, {
      prefix: `pp-${helper}`,
      launch: { mpirun: 'mpirun', asRoot: process.getuid?.() === 0 },
    });
    const ok = h.task(
      {
        ranks: 2,
        executable: '/bin/sh',
        arguments: ['-c', 'echo "$PF_RANK $FOO $*"', 'x', 'a b'],
        preExec: ['export FOO="pre$PF_RANK"'],
        postExec: ['touch "post$PF_RANK"'],
      },
      [slot([0]), slot([1])],
    );
    const bad = h.task(
      {
        ranks: 2,
        executable: '/bin/touch',
        arguments: ['ran'],
        preExec: ['[ "$PF_RANK" = 0 ] || exit 5'],
      },
      [slot([0]), slot([1])],
    );
    h.core.onTasks([ok, bad]);
    expect(lines(await h.done(ok))).toEqual(['0 pre0 a b', '1 pre1 a b']);
    expect([ok.exitCode, marker(ok, 'post0'), marker(ok, 'post1')]).toEqual([0, true, true]);
    await h.done(bad);
    expect(bad.exitCode).not.toBe(0);
    expect(bad.reason).toMatchObject({
      code: 'E_PRE_EXEC',
      message: `preExec[0] '[ "$PF_RANK" = 0 ] || exit 5' failed with exit code 5 on rank 1: the executable did not run`,
      detail: { rank: 1, exitCode: 5 },
    });
  });
});
