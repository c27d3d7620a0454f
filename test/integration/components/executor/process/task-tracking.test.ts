/**
 * What a kill, the end of a task and the end of a helper reach, through SpawnerPool over real
 * helpers: every process a task started, those that ignore SIGTERM, left the session or
 * double-forked included, with each helper (C and Node) and each tracking (a cgroup per task,
 * or /proc) this machine offers.
 */
import { afterEach, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { SpawnSpec } from '../../../../../src/components/executor/effects';
import type { TrackingKind } from '../../../../../src/components/executor/process/helper/protocol';
import {
  SpawnerPool,
  spawnerCommand,
  type SpawnerHelper,
} from '../../../../../src/components/executor/process/spawner-pool';
import { withTimeout } from '../../../../../src/lib/deferred';
import { silentLogger } from '../../../../../src/lib/logger';
import {
  Events,
  WAIT_MS,
  describeEachHelper,
  procIds,
  recordingLogger,
  tempSandboxes,
} from './spawner-fixtures';
import {
  LEAVE_BEHIND,
  allGone,
  describeEachTracking,
  killAll,
  leftPids,
} from './tracking-fixtures';
import { pidWritten } from '../../../../support/pid-file';

/** The kill grace of the pools that wait for it; others use LONG_GRACE_MS to show they do not. */
const GRACE_MS = 300;
const LONG_GRACE_MS = 600_000;

/** Pids a test saw, killed after it in case it failed before they were gone. */
const seen: number[] = [];

const { spec } = tempSandboxes('pf-tracking-');

/** The task of fixtures/leave-behind.sh: `exit` once its four are running, or `run` on. */
function leaving(mode: 'exit' | 'run'): SpawnSpec {
  return spec('/bin/sh', [LEAVE_BEHIND, mode]);
}

async function left(s: SpawnSpec): Promise<number[]> {
  const pids = await leftPids(s.cwd);
  seen.push(...pids);
  return pids;
}

describeEachTracking('SpawnerPool tracking', (helper: SpawnerHelper, tracking: TrackingKind) => {
  let pool: SpawnerPool | undefined;
  let events: Events;

  afterEach(async () => {
    await pool?.close();
    pool = undefined;
    killAll(seen.splice(0));
  });

  async function start(killGraceMs: number): Promise<SpawnerPool> {
    events = new Events();
    pool = await SpawnerPool.start({
      count: 1,
      logger: silentLogger,
      handlers: events.handlers,
      helper,
      tracking,
      killGraceMs,
    });
    return pool;
  }

  /** The base cgroup of the pool (cgroup tracking). */
  function base(p: SpawnerPool): string {
    return (p as unknown as { track: { base: string } }).track.base;
  }

  it('tracks as asked', async () => {
    const p = await start(GRACE_MS);
    expect(p.tracking).toBe(tracking);
  });

  it('a SIGTERM reaches every process the task left, and the SIGKILL after the grace ends those that ignore it, though the main process exited first', async () => {
    const p = await start(GRACE_MS);
    const s = leaving('run');
    p.spawn(s);
    const pids = await left(s);
    p.kill(s.uid, 'SIGTERM'); // and no SIGKILL from here: the helper sends it
    expect(await events.exit(s.uid)).toMatchObject({ exitCode: null, signal: 'SIGTERM' });
    await allGone(pids, WAIT_MS);
  });

  it('a SIGKILL reaches every process the task started, at once', async () => {
    const p = await start(LONG_GRACE_MS);
    const s = leaving('run');
    p.spawn(s);
    const pids = await left(s);
    p.kill(s.uid, 'SIGKILL');
    expect(await events.exit(s.uid)).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
    await allGone(pids, WAIT_MS);
  });

  it('what a task leaves when it exits 0 gets SIGTERM, then SIGKILL after the grace', async () => {
    const p = await start(GRACE_MS);
    const s = leaving('exit');
    const polite = spec('/bin/sh', ['-c', 'sleep 1000 & echo $! > pid']); // ends on SIGTERM
    p.spawn(s);
    p.spawn(polite);
    const pids = await left(s);
    const sleeper = await pidWritten(polite.cwd);
    seen.push(sleeper);
    expect(await events.exit(s.uid)).toEqual({ uid: s.uid, exitCode: 0, signal: null });
    expect(await events.exit(polite.uid)).toEqual({ uid: polite.uid, exitCode: 0, signal: null });
    await allGone([...pids, sleeper], WAIT_MS);
  });

  /** One task that ended and one that runs, each with its four leftovers running: their pids. */
  async function endedAndRunning(p: SpawnerPool): Promise<{ running: SpawnSpec; pids: number[] }> {
    const ended = leaving('exit');
    const running = leaving('run');
    p.spawn(ended);
    p.spawn(running);
    const pids = [...(await left(ended)), ...(await left(running))];
    await events.exit(ended.uid);
    return { running, pids };
  }

  it('closing the pool kills what running tasks started and what ended ones left', async () => {
    const p = await start(LONG_GRACE_MS);
    const { running, pids } = await endedAndRunning(p);
    const cgroups = tracking === 'cgroup' ? base(p) : undefined;
    await p.close();
    expect(events.exited.get(running.uid)).toMatchObject({ signal: 'SIGKILL' });
    await allGone(pids, WAIT_MS);
    if (cgroups !== undefined) expect(fs.existsSync(cgroups)).toBe(false);
  });

  it('a helper that dies: the pool kills what its tasks started and left', async () => {
    const p = await start(LONG_GRACE_MS);
    const { running, pids } = await endedAndRunning(p);
    const helperPid = procIds(await events.pid(running.uid)).ppid;
    process.kill(helperPid, 'SIGKILL');
    expect(await events.failure(running.uid)).toMatchObject({ code: 'E_SPAWNER_DIED' });
    await allGone(pids, WAIT_MS);
  });

  it('leaves what an srun task (killScope process) started to srun: its shepherd must outlive it', async () => {
    const p = await start(GRACE_MS);
    const srun = spec('/bin/sh', ['-c', 'sleep 1000 & echo $! > pid']);
    srun.killScope = 'process';
    p.spawn(srun);
    const shepherd = await pidWritten(srun.cwd);
    seen.push(shepherd);
    await events.exit(srun.uid);
    // Another task's leftovers end after the grace: by then the shepherd would have too.
    const other = leaving('exit');
    p.spawn(other);
    await allGone(await left(other), WAIT_MS);
    expect(() => process.kill(shepherd, 0)).not.toThrow();
  });

  it('marks every process of a task with PF_TASK_MARK, one per task, that the task cannot set', async () => {
    const p = await start(GRACE_MS);
    const a = spec('/bin/sh', ['-c', 'echo $PF_TASK_MARK'], { PF_TASK_MARK: 'mine' });
    const b = spec('/bin/sh', ['-c', 'echo $PF_TASK_MARK']);
    p.spawn(a);
    p.spawn(b);
    await events.exit(a.uid);
    await events.exit(b.uid);
    const [ma, mb] = [a, b].map((s) => fs.readFileSync(s.stdoutPath, 'utf8').trim());
    expect(ma).toMatch(/^pf\.\d+\.[0-9a-z]+\.\d+$/);
    expect(mb).toMatch(/^pf\.\d+\.[0-9a-z]+\.\d+$/);
    expect(ma).not.toBe(mb);
  });

  if (tracking === 'cgroup') {
    it('runs each task in a cgroup of its own under the pool, gone once the task ends', async () => {
      const p = await start(GRACE_MS);
      const s = spec('/bin/sh', ['-c', 'cat /proc/self/cgroup']);
      p.spawn(s);
      await events.exit(s.uid);
      const own = /^0::(.*)$/m.exec(fs.readFileSync(s.stdoutPath, 'utf8'))![1]!;
      const dirOf = path.join(path.dirname(base(p)), own.slice(own.indexOf('/pilotfish-')));
      expect(dirOf).toMatch(new RegExp(`^${base(p)}/\\d+/\\d+$`));
      expect(fs.existsSync(dirOf)).toBe(false);
      expect(fs.existsSync(path.dirname(dirOf))).toBe(true); // the helper's own
    });

    it('reaches processes in cgroups a task made below its own, and removes those too', async () => {
      const lines: string[] = [];
      events = new Events();
      pool = await SpawnerPool.start({
        count: 1,
        logger: recordingLogger(lines),
        handlers: events.handlers,
        helper,
        tracking,
        killGraceMs: LONG_GRACE_MS,
      });
      // An agent run as a task does this: a cgroup below the task's, with a process in it.
      const s = spec('/bin/sh', [
        '-c',
        `cg=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)$(sed -n 's/^0:://p' /proc/self/cgroup)
         mkdir "$cg/inner" || exit 1
         sleep 1000 &
         echo $! > "$cg/inner/cgroup.procs" && echo $! > pid`,
      ]);
      pool.spawn(s);
      const sleeper = await pidWritten(s.cwd);
      seen.push(sleeper);
      expect(await events.exit(s.uid)).toMatchObject({ exitCode: 0 });
      await allGone([sleeper], WAIT_MS); // SIGTERM, long before the grace
      await pool.close();
      pool = undefined;
      expect(lines).toEqual(['info spawner helpers started']); // no cgroup left to complain of
    });
  }
});

describeEachHelper('a spawner helper given a cgroup it cannot use', (helper: SpawnerHelper) => {
  it('says why in its ready event and tracks through /proc', async () => {
    const { file, args } = spawnerCommand(helper);
    const proc = spawn(file, [...args, '--cgroup', '/nonexistent/pf-base'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let text = '';
    proc.stdout.setEncoding('utf8');
    const ready = new Promise<string>((resolve) =>
      proc.stdout.on('data', (c: string) => {
        text += c;
        if (text.includes('\n')) resolve(text.split('\n')[0]!);
      }),
    );
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    try {
      const ev = JSON.parse(await withTimeout(ready, WAIT_MS, 'ready')) as Record<string, unknown>;
      expect(ev).toEqual({
        ev: 'ready',
        pid: proc.pid,
        tracking: 'proc',
        markPrefix: expect.stringMatching(new RegExp(`^pf\\.${proc.pid}\\.[0-9a-z]+\\.$`)),
        why: `cannot create '/nonexistent/pf-base/${proc.pid}': no such file or directory`,
      });
    } finally {
      proc.stdin.end();
      await withTimeout(exited, WAIT_MS, 'helper exit');
    }
  });
});
