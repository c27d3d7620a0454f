/**
 * SpawnerPool over real helpers, run once with each: the C pf-spawner (the default) and the Node
 * process/helper/main.ts (the fallback). Cases beyond these, mostly about the helpers themselves, are in
 * spawner-helpers.test.ts.
 */
import { afterAll, afterEach, beforeAll, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { FileSpawnSpec, SpawnSpec } from '../../../../../src/components/executor/effects';
import {
  SpawnerPool,
  type SpawnerPoolOptions,
  type SpawnerHelper,
} from '../../../../../src/components/executor/process/spawner-pool';
import { silentLogger, type Logger } from '../../../../../src/lib/logger';
import {
  Events,
  RawHelper,
  describeEachHelper,
  errnoOf,
  recordingLogger,
  sandboxSpec,
} from './spawner-fixtures';
import { cleanupFifos, fifo } from '../../../../support/fifo';

describeEachHelper('SpawnerPool', (helper: SpawnerHelper) => {
  let dir: string;
  let pool: SpawnerPool | undefined;
  let events: Events;
  let n = 0;

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-spawner-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  afterEach(async () => {
    await pool?.close();
    pool = undefined;
    cleanupFifos();
  });

  async function start(
    count = 1,
    logger: Logger = silentLogger,
    more: Partial<SpawnerPoolOptions> = {},
  ): Promise<SpawnerPool> {
    events = new Events();
    pool = await SpawnerPool.start({ count, logger, handlers: events.handlers, helper, ...more });
    return pool;
  }

  /** Kills the helper that runs `s` (the parent of its process) and returns its pid. */
  async function killHelperOf(s: SpawnSpec): Promise<number> {
    const pid = await events.pid(s.uid);
    const helperPid = Number(
      fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[1],
    );
    process.kill(helperPid, 'SIGKILL');
    return helperPid;
  }

  /** A spec with a fresh uid and sandbox. */
  function spec(
    executable: string,
    args: string[] = [],
    env: Record<string, string> = {},
  ): FileSpawnSpec {
    return sandboxSpec(dir, `task.${++n}`, executable, args, env);
  }

  it('reports the exit code and writes stdout and stderr to their files', async () => {
    const p = await start();
    const s = spec('/bin/sh', ['-c', 'echo out; echo err >&2; exit 3']);
    p.spawn(s);
    expect(await events.pid(s.uid)).toBeGreaterThan(0);
    expect(await events.exit(s.uid)).toEqual({ uid: s.uid, exitCode: 3, signal: null });
    expect(fs.readFileSync(s.stdoutPath, 'utf8')).toBe('out\n');
    expect(fs.readFileSync(s.stderrPath, 'utf8')).toBe('err\n');
    expect(p.running()).toBe(0);
  });

  it('merges the env overrides over the inherited environment', async () => {
    const p = await start();
    const s = spec('/usr/bin/printenv', ['PF_TASK_ID', 'PATH'], { PF_TASK_ID: 'task-42' });
    p.spawn(s);
    expect(await events.exit(s.uid)).toMatchObject({ exitCode: 0 });
    expect(fs.readFileSync(s.stdoutPath, 'utf8')).toBe(`task-42\n${process.env.PATH}\n`);
  });

  it('writes the launch files before the task starts', async () => {
    const p = await start();
    const s = spec('/bin/cat', ['hostfile']);
    s.files = [{ path: path.join(s.cwd, 'hostfile'), content: 'n0\nn1\n' }];
    p.spawn(s);
    expect(await events.exit(s.uid)).toMatchObject({ exitCode: 0 });
    expect(fs.readFileSync(s.stdoutPath, 'utf8')).toBe('n0\nn1\n');
  });

  it('fails a task whose launch file cannot be written, without starting it', async () => {
    const p = await start();
    const s = spec('/bin/true');
    const file = path.join(s.cwd, 'no-such-dir', 'hostfile');
    s.files = [{ path: file, content: 'n0\n' }];
    p.spawn(s);
    expect(await events.failure(s.uid)).toEqual({
      uid: s.uid,
      code: 'ENOENT',
      message: `cannot write '${file}': no such file or directory`,
    });
    expect(events.started.has(s.uid)).toBe(false);
  });

  it('reports a missing executable as failed with ENOENT', async () => {
    const p = await start();
    const s = spec('/no/such/exe');
    p.spawn(s);
    expect(await events.failure(s.uid)).toEqual({
      uid: s.uid,
      code: 'ENOENT',
      message: 'no such file or directory',
    });
    expect(events.started.has(s.uid)).toBe(false);
    expect(p.running()).toBe(0);
  });

  it('kills a task with SIGTERM', async () => {
    const p = await start();
    const s = spec('/bin/sleep', ['30']);
    p.spawn(s);
    await events.pid(s.uid);
    p.kill(s.uid, 'SIGTERM');
    expect(await events.exit(s.uid)).toEqual({ uid: s.uid, exitCode: null, signal: 'SIGTERM' });
  });

  it('kills the whole process group of a task that ignores SIGTERM with SIGKILL', async () => {
    const p = await start();
    const s = spec('/bin/sh', ['-c', 'trap "" TERM; sleep 30 & echo ready; wait']);
    const out = fifo(s.stdoutPath);
    p.spawn(s);
    expect(await out.data()).toBe('ready\n'); // the trap is set and the grandchild runs
    p.kill(s.uid, 'SIGTERM');
    // A full spawn and exit on the same helper, queued after the SIGTERM, lets it land.
    const probe = spec('/bin/true');
    p.spawn(probe);
    await events.exit(probe.uid);
    expect(events.exited.has(s.uid)).toBe(false);
    p.kill(s.uid, 'SIGKILL');
    expect(await events.exit(s.uid)).toEqual({ uid: s.uid, exitCode: null, signal: 'SIGKILL' });
    await out.gone(); // the grandchild `sleep` is gone too
  });

  it.each(['kill', 'close'] as const)(
    "signals only the task's own process on %s when its kill scope is 'process' (srun)",
    async (how) => {
      const p = await start();
      // The child stands for srun's shepherd: it must outlive srun to cancel the step.
      const s = spec('/bin/sh', ['-c', 'sleep 30 & echo $!; wait']);
      s.killScope = 'process';
      const out = fifo(s.stdoutPath);
      p.spawn(s);
      const child = Number(await out.data());
      try {
        if (how === 'kill') p.kill(s.uid, 'SIGKILL');
        else await p.close();
        expect(await events.exit(s.uid)).toEqual({ uid: s.uid, exitCode: null, signal: 'SIGKILL' });
        expect(errnoOf(() => process.kill(child, 0))).toBeUndefined();
      } finally {
        process.kill(child, 'SIGKILL');
      }
      await out.gone();
    },
  );

  it('runs 500 /bin/true over 2 helpers and reports every exit', async () => {
    const p = await start(2);
    const bulk = path.join(dir, 'bulk');
    fs.mkdirSync(bulk);
    const uids: string[] = [];
    for (let i = 0; i < 500; i++) {
      const uid = `bulk.${i}`;
      uids.push(uid);
      const base = path.join(bulk, String(i));
      p.spawn({
        uid,
        executable: '/bin/true',
        args: [],
        env: {},
        cwd: bulk,
        stdoutPath: `${base}.out`,
        stderrPath: `${base}.err`,
      });
    }
    await events.until('500 exits', () => events.exited.size === 500, 9_000);
    expect(uids.every((u) => events.exited.get(u)?.exitCode === 0)).toBe(true);
    expect(events.failed.size).toBe(0);
  });

  it('leaves no process behind when closed while a task runs', async () => {
    const p = await start();
    const s = spec('/bin/sleep', ['30']);
    p.spawn(s);
    const pid = await events.pid(s.uid);
    expect(errnoOf(() => process.kill(pid, 0))).toBeUndefined();
    await p.close();
    expect(errnoOf(() => process.kill(pid, 0))).toBe('ESRCH');
    expect(events.exited.get(s.uid)).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
  });

  it('fails the tasks of a helper that dies, kills their process groups, and replaces it', async () => {
    const lines: string[] = [];
    const p = await start(1, recordingLogger(lines));
    const s = spec('/bin/sleep', ['30']);
    const out = fifo(s.stdoutPath);
    p.spawn(s);
    const helperPid = await killHelperOf(s);
    const failure = await events.failure(s.uid);
    expect(failure.code).toBe('E_SPAWNER_DIED');
    expect(failure.message).toBe(`the spawner helper (pid ${helperPid}) died (killed by SIGKILL)`);
    expect(lines).toContain('error spawner helper died');
    expect(lines).toContain('warn spawner helper replaced');
    await out.gone();
    const late = spec('/bin/true');
    p.spawn(late);
    expect(await events.exit(late.uid)).toEqual({ uid: late.uid, exitCode: 0, signal: null });
  });

  it('gives up on helpers that keep dying, says so once, and fails later spawns with why', async () => {
    const unusable: string[] = [];
    events = new Events();
    pool = await SpawnerPool.start({
      count: 1,
      logger: silentLogger,
      handlers: { ...events.handlers, unusable: (m) => unusable.push(m) },
      helper,
      respawn: { max: 1, windowMs: 60_000 },
    });
    const first = spec('/bin/sleep', ['30']);
    pool.spawn(first);
    await killHelperOf(first); // replaced
    await events.failure(first.uid);
    const second = spec('/bin/sleep', ['30']);
    pool.spawn(second);
    await killHelperOf(second); // the second death in the window: no more
    await events.failure(second.uid);
    await events.until('unusable', () => unusable.length > 0);
    expect(unusable).toEqual([expect.stringMatching(/^spawner helpers keep dying: 2 in 60 s/)]);
    const late = spec('/bin/true');
    pool.spawn(late);
    expect((await events.failure(late.uid)).message).toBe(unusable[0]);
  });
});

describeEachHelper('spawner helper', (helper: SpawnerHelper) => {
  let h: RawHelper | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('answers a bad line with an error event, keeps serving and exits when stdin ends', async () => {
    h = await RawHelper.start(helper);
    h.write('not json\n{"op":"explode"}\n');
    h.send({ op: 'kill', uid: 'nobody', signal: 'SIGTERM' });
    h.send({
      op: 'spawn',
      uid: 'u1',
      executable: '/no/exe',
      args: [],
      env: {},
      cwd: '/',
      stdoutPath: '/dev/null',
      stderrPath: '/dev/null',
    });
    await h.of('failed', 'u1');
    expect(await h.end()).toEqual({ code: 0, signal: null });
    expect(h.events).toEqual([
      {
        ev: 'ready',
        pid: h.proc.pid,
        tracking: 'proc', // no --cgroup given
        markPrefix: expect.stringMatching(/^pf\.\d+\.[0-9a-z]+\.$/),
      },
      { ev: 'error', message: 'not JSON: not json' },
      { ev: 'error', message: 'bad request: {"op":"explode"}' },
      { ev: 'failed', uid: 'u1', code: 'ENOENT', message: 'no such file or directory' },
    ]);
  });
});
