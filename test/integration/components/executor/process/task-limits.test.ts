/**
 * Task limits through SpawnerPool over real helpers (C and Node): a task starts inside the cgroup
 * v1 controllers' cgroups the pool made and limited (pool-limits.ts); past its memory it is
 * OOM-killed and its exit says so; a fork bomb stays at its pids limit while other tasks run;
 * every cgroup goes once its task ends and the pool closes; where no controller can be written
 * tasks run without limits and the pool says why. Skipped where this machine has no writable
 * v1 controllers.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { SpawnSpec } from '../../../../../src/components/executor/effects';
import { PoolLimits } from '../../../../../src/components/executor/process/pool-limits';
import type { TaskLimiter } from '../../../../../src/components/executor/process/task-limiter';
import {
  SpawnerPool,
  type SpawnerHelper,
} from '../../../../../src/components/executor/process/spawner-pool';
import type { Controller } from '../../../../../src/components/executor/process/task-limits';
import type { TaskLimits } from '../../../../../src/components/executor/process/helper/protocol';
import { silentLogger } from '../../../../../src/lib/logger';
import { pidWritten } from '../../../../support/pid-file';
import {
  Events,
  RawHelper,
  WAIT_MS,
  describeEachHelper,
  recordingLogger,
  tempSandboxes,
} from './spawner-fixtures';
import { allGone, killAll } from './tracking-fixtures';

const MIB = 1024 * 1024;

/** Whether the v1 controllers can be written here: a pool's bases are made and removed again. */
function limitsHere(): string | undefined {
  const probe = PoolLimits.make({}, silentLogger);
  void probe.close();
  return probe.why;
}
const WHY_NOT = limitsHere();

/** The test's pool's bases, by controller (to see them gone). */
function bases(p: SpawnerPool): Map<Controller, string> {
  return (p.limits as unknown as { bases: Map<Controller, string> }).bases;
}

/** A shell word: the task's own v1 cgroup directory of `controller` (mounted on its own). */
const own = (controller: string): string =>
  `/sys/fs/cgroup/${controller}$(sed -n 's/^[0-9]*:${controller}://p' /proc/self/cgroup)`;

const seen: number[] = [];
const { spec } = tempSandboxes('pf-limits-');

function limited(s: SpawnSpec, limits: TaskLimits): SpawnSpec {
  return { ...s, limits };
}

const describeHere = WHY_NOT === undefined ? describeEachHelper : skipEachHelper;
function skipEachHelper(title: string, body: (helper: SpawnerHelper) => void): void {
  describe.skip(`${title} (skipped: ${WHY_NOT})`, () => body('node'));
}

describeHere('SpawnerPool task limits', (helper: SpawnerHelper) => {
  let pool: SpawnerPool | undefined;
  let events: Events;

  afterEach(async () => {
    const p = pool;
    pool = undefined;
    await p?.close();
    killAll(seen.splice(0));
    const made = p === undefined ? [] : [...bases(p).values()];
    for (const dir of made) expect(fs.existsSync(dir)).toBe(false);
  });

  async function start(killGraceMs = 200): Promise<SpawnerPool> {
    events = new Events();
    pool = await SpawnerPool.start({
      count: 1,
      logger: silentLogger,
      handlers: events.handlers,
      helper,
      killGraceMs,
    });
    return pool;
  }

  it('starts the task inside cgroups that hold its limits, removed once it ends', async () => {
    const p = await start();
    const s = limited(
      spec('/bin/sh', [
        '-c',
        `cat ${own('memory')}/memory.limit_in_bytes ${own('pids')}/pids.max ${own('cpu')}/cpu.cfs_quota_us; echo ${own('pids')}`,
      ]),
      { memoryBytes: 96 * MIB, pids: 40, cpus: 0.5 },
    );
    p.spawn(s);
    expect(await events.exit(s.uid)).toEqual({ uid: s.uid, exitCode: 0, signal: null });
    const [memory, pids, quota, dir] = fs.readFileSync(s.stdoutPath!, 'utf8').trim().split('\n');
    expect([Number(memory), Number(pids), Number(quota)]).toEqual([96 * MIB, 40, 50_000]);
    expect(dir!.startsWith(`${bases(p).get('pids')}/`)).toBe(true);
    expect(fs.existsSync(dir!)).toBe(false);
  });

  it('a task past its memory limit is OOM-killed and its exit says so; a neighbour runs on', async () => {
    const p = await start();
    const hog = limited(spec('/bin/sh', ['-c', 'dd if=/dev/zero of=/dev/null bs=256M count=1']), {
      memoryBytes: 32 * MIB,
    });
    const neighbour = limited(
      spec('/bin/sh', ['-c', 'dd if=/dev/zero of=/dev/null bs=8M count=4']),
      {
        memoryBytes: 32 * MIB,
      },
    );
    p.spawn(hog);
    p.spawn(neighbour);
    const exit = await events.exit(hog.uid);
    expect(exit.exitCode).not.toBe(0);
    expect(exit.oom).toMatchObject({ limitBytes: 32 * MIB });
    expect(exit.oom!.kills).toBeGreaterThanOrEqual(1);
    expect(await events.exit(neighbour.uid)).toEqual({
      uid: neighbour.uid,
      exitCode: 0,
      signal: null,
    });
  });

  it('a fork bomb stops at its pids limit while other tasks start and end; all of it dies', async () => {
    const p = await start();
    // Refuses to run unless its pids cgroup holds it (pids.max at most 64): no runaway here.
    const bomb = limited(
      spec('/bin/sh', [
        '-c',
        `[ "$(cat ${own('pids')}/pids.max)" -le 64 ] || exit 3
         i=0; while :; do sleep 100 & echo $! >> pids; i=$((i+1)); echo $i > n; done`,
      ]),
      { pids: 24 },
    );
    p.spawn(bomb);
    const exit = await events.exit(bomb.uid); // dash gives up at the first fork that fails
    expect(exit.exitCode).toBe(2);
    expect(fs.readFileSync(bomb.stderrPath!, 'utf8')).toMatch(/fork/i);
    const forked = Number(fs.readFileSync(path.join(bomb.cwd, 'n'), 'utf8'));
    expect(forked).toBeLessThan(24);
    const pids = fs.readFileSync(path.join(bomb.cwd, 'pids'), 'utf8').split('\n').filter(Boolean);
    seen.push(...pids.map(Number));
    const other = spec('/bin/sh', ['-c', 'echo $$ > pid']);
    p.spawn(other);
    await pidWritten(other.cwd);
    expect(await events.exit(other.uid)).toMatchObject({ exitCode: 0 });
    await allGone(pids.map(Number), WAIT_MS); // its leftovers: SIGTERM, then SIGKILL
  });
});

describeHere('a spawner helper given cgroups to start a task in', (helper: SpawnerHelper) => {
  let h: RawHelper | undefined;
  let limits: TaskLimiter | undefined;

  afterEach(async () => {
    await h?.close();
    h = undefined;
    await limits?.close();
    limits = undefined;
  });

  it('fails the spawn naming the one it cannot enter, back where it was; then starts the next', async () => {
    h = await RawHelper.start(helper);
    limits = PoolLimits.make({}, silentLogger);
    const s = spec('/bin/true');
    const [dir] = limits.request({ ...s, limits: { pids: 32 } }).cgroups!;
    const before = fs.readFileSync(`/proc/${h.proc.pid}/cgroup`, 'utf8');
    h.send({ op: 'spawn', ...s, cgroups: [dir!, '/nonexistent/pf/1'] });
    expect(await h.of('failed', s.uid)).toEqual({
      ev: 'failed',
      uid: s.uid,
      code: 'ENOENT',
      message: "cannot enter the task's cgroup '/nonexistent/pf/1': no such file or directory",
    });
    expect(fs.readFileSync(`/proc/${h.proc.pid}/cgroup`, 'utf8')).toBe(before);
    h.send({ op: 'spawn', ...s, uid: 'again', cgroups: ['/x\0y'] });
    expect(await h.of('failed', 'again')).toMatchObject({
      code: 'EINVAL',
      message: 'cgroups[0] contains a NUL byte',
    });
    h.send({ op: 'spawn', ...s, uid: 'next', cgroups: [dir!] });
    expect(await h.of('exited', 'next')).toMatchObject({ exitCode: 0 });
    expect(fs.readFileSync(`/proc/${h.proc.pid}/cgroup`, 'utf8')).toBe(before);
    limits.ended(s.uid);
  });
});

describeEachHelper('SpawnerPool where no limit can be set', (helper: SpawnerHelper) => {
  let pool: SpawnerPool | undefined;

  afterEach(async () => {
    await pool?.close();
    pool = undefined;
  });

  it('runs tasks without limits, says why, and warns once', async () => {
    const events = new Events();
    const lines: string[] = [];
    pool = await SpawnerPool.start({
      count: 1,
      logger: recordingLogger(lines),
      handlers: events.handlers,
      helper,
      limits: { v1Root: '/nonexistent/cgroup' },
    });
    expect(pool.limits.controllers).toEqual([]);
    expect(pool.limits.why).toMatch(
      /^memory: cannot create '\/nonexistent\/cgroup\/memory\/.*': no such file or directory; pids: .*; cpu: /,
    );
    const a = limited(spec('/bin/true'), { memoryBytes: 64 * MIB, pids: 32 });
    const b = limited(spec('/bin/true'), { memoryBytes: 64 * MIB });
    pool.spawn(a);
    pool.spawn(b);
    expect(await events.exit(a.uid)).toEqual({ uid: a.uid, exitCode: 0, signal: null });
    expect(await events.exit(b.uid)).toEqual({ uid: b.uid, exitCode: 0, signal: null });
    expect(lines.filter((l) => l.includes('limits'))).toEqual([
      'warn some limits of tasks cannot be set here',
    ]);
  });
});
