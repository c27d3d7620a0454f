/**
 * Keep mode: spawner helpers that outlive their master (--keep PATH --keep-ms N), and the pool
 * that re-attaches to them (SpawnerPoolOptions.keep, SpawnerPool.attach, status()); with real
 * helpers, processes and sockets, once with each helper. Also the status and end requests,
 * which work in both modes. The default (no keep: the end of stdin kills every task) is what
 * the other spawner tests run.
 */
import { afterAll, afterEach, beforeAll, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ExitedEvent } from '../../../../../src/components/executor/effects';
import { connectKeep } from '../../../../../src/components/executor/process/helper-conn';
import {
  SpawnerPool,
  spawnerCommand,
  type SpawnerHelper,
  type SpawnerPoolOptions,
} from '../../../../../src/components/executor/process/spawner-pool';
import { withTimeout } from '../../../../../src/lib/deferred';
import { silentLogger } from '../../../../../src/lib/logger';
import { cleanupFifos, fifo } from '../../../../support/fifo';
import { waitForExit } from '../../../../support/processes';
import { MasterProcess, SocketMaster, appears } from './keep-fixtures';
import {
  Events,
  RawHelper,
  WAIT_MS,
  describeEachHelper,
  sandboxSpec,
  type HelperEvent,
} from './spawner-fixtures';

/** Long enough that a helper left by a failed test ends on its own, its tasks with it. */
const KEEP_MS = 8_000;

describeEachHelper('spawner keep mode', (helper: SpawnerHelper) => {
  let dir: string;
  let n = 0;
  let pool: SpawnerPool | undefined;
  /** Helpers of this process, in keep mode (stdin's end does not stop them): their sockets. */
  const kept: { h: RawHelper; sock: string }[] = [];
  const masters: MasterProcess[] = [];
  const keepDirs: string[] = [];

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-keep-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  afterEach(async () => {
    await pool?.close();
    pool = undefined;
    for (const m of masters.splice(0)) if (m.proc.exitCode === null) await m.kill();
    for (const { h, sock } of kept.splice(0)) {
      if (h.proc.exitCode !== null) continue;
      if (h.proc.stdin.writable) h.send({ op: 'end' });
      else await endKept(sock);
      await h.close();
    }
    for (const d of keepDirs.splice(0)) {
      for (const f of fs.readdirSync(d)) await endKept(path.join(d, f));
    }
    cleanupFifos();
  });

  /** Ends a helper a test left detached, through its socket (nothing listens: nothing to do). */
  async function endKept(sock: string): Promise<void> {
    const s = await connectKeep(sock, 300).catch(() => undefined);
    if (s === undefined) return;
    const closed = new Promise((resolve) => s.once('close', resolve));
    s.resume();
    s.write('{"op":"end"}\n');
    await withTimeout(closed, WAIT_MS, `end of the helper at ${sock}`);
  }

  function spec(executable: string, args: string[] = []): ReturnType<typeof sandboxSpec> {
    return sandboxSpec(dir, `task.${++n}`, executable, args);
  }

  /** A helper of this process in keep mode, its socket in `dir`. */
  async function keptHelper(ms = KEEP_MS): Promise<{ h: RawHelper; sock: string }> {
    const sock = path.join(dir, `h${++n}.sock`);
    const h = await RawHelper.start(helper, ['--keep', sock, '--keep-ms', String(ms)]);
    kept.push({ h, sock });
    return { h, sock };
  }

  function keepDir(): string {
    const d = fs.mkdtempSync(path.join(dir, 'keep-'));
    keepDirs.push(d);
    return d;
  }

  function attachOpts(d: string, events: Events, more: Partial<SpawnerPoolOptions> = {}) {
    const keep = { dir: d, ms: KEEP_MS };
    return { count: 1, helper, logger: silentLogger, handlers: events.handlers, keep, ...more };
  }

  it('answers status with what runs, what is queued and the last 1,024 ends as they were sent; end stops it', async () => {
    const h = await RawHelper.start(helper);
    kept.push({ h, sock: '' });
    const long = spec('/bin/sleep', ['30']);
    const behind = { ...spec('/bin/true'), after: long.uid };
    h.send({ op: 'spawn', ...long }, { op: 'spawn', ...behind });
    const pid = (await h.of('started', long.uid)).pid;
    // failed at once (a NUL byte), without a fork: more ends than the ring holds
    const never = path.join(dir, 'never');
    const bad = Array.from({ length: 1030 }, (_, i) => ({
      op: 'spawn',
      ...{ uid: `bad.${i}`, executable: '/bin/\u0000true', args: [], env: {}, cwd: dir },
      ...{ stdoutPath: never, stderrPath: never },
    }));
    h.send(...bad);
    await h.of('failed', 'bad.1029');
    h.send({ op: 'status' });
    const status = await h.next('status', (e) => e.ev === 'status');
    expect(status.running).toEqual([{ uid: long.uid, pid }]);
    expect(status.queued).toEqual([behind.uid]);
    const ended = status.ended as HelperEvent[];
    expect(ended).toEqual(h.events.filter((e) => e.ev === 'failed').slice(-1024));
    expect(ended.map((e) => e.uid)[0]).toBe('bad.6');

    const after = spec('/bin/true');
    h.send({ op: 'end' }, { op: 'spawn', ...after }); // what follows an end is ignored
    expect(await withTimeout(h.exit, WAIT_MS, 'helper exit')).toEqual({ code: 0, signal: null });
    expect(await h.of('exited', long.uid)).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
    expect(await h.of('failed', behind.uid)).toMatchObject({ code: 'ECANCELED' });
    expect(h.events.filter((e) => e.uid === after.uid)).toEqual([]);
  });

  it('keeps its tasks when its master goes; the next one gets a ready event, then what was held', async () => {
    const { h, sock } = await keptHelper();
    const goPath = path.join(dir, `go.${++n}`);
    const go = fifo(goPath);
    const first = spec('/bin/sleep', ['30']);
    const next = { ...spec('/bin/sh', ['-c', `echo go > ${goPath}`]), after: first.uid };
    const long = spec('/bin/sleep', ['30']);
    h.send({ op: 'spawn', ...first }, { op: 'spawn', ...next }, { op: 'spawn', ...long });
    const firstPid = (await h.of('started', first.uid)).pid as number;
    const longPid = (await h.of('started', long.uid)).pid as number;
    h.proc.stdin.end(); // the master goes
    await appears(sock);
    expect(fs.statSync(sock).mode & 0o777).toBe(0o600);
    process.kill(firstPid, 'SIGTERM'); // it ends while no master is attached...
    await go.data(); // ...and `next` started behind it: its exit is held

    const m = await SocketMaster.connect(sock);
    expect(m.events[0]).toMatchObject({ ev: 'ready', pid: h.proc.pid, reattached: true });
    const exit = await m.of('exited', first.uid);
    expect(exit).toMatchObject({ exitCode: null, signal: 'SIGTERM' });
    const started = await m.of('started', next.uid);
    expect(m.events.indexOf(exit)).toBeLessThan(m.events.indexOf(started));
    expect(h.events.filter((e) => e.uid === first.uid).map((e) => e.ev)).toEqual(['started']);
    // one master at a time: the socket is gone while one is attached
    await expect(connectKeep(sock, 200)).rejects.toThrow(`'${sock}'`);
    // the protocol runs over the socket
    const more = spec('/bin/sh', ['-c', 'echo more']);
    m.send({ op: 'spawn', ...more });
    expect(await m.of('exited', more.uid)).toMatchObject({ exitCode: 0, signal: null });
    expect(fs.readFileSync(more.stdoutPath, 'utf8')).toBe('more\n');

    m.socket.destroy(); // a second loss
    await m.closed;
    process.kill(longPid, 'SIGKILL');
    const m2 = await SocketMaster.connect(sock);
    expect(await m2.of('exited', long.uid)).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
    m2.send({ op: 'status' });
    const status = await m2.next('status', (e) => e.ev === 'status');
    expect(status.running).toEqual([]);
    expect(status.ended).toContainEqual(exit);
    expect(m2.events.filter((e) => e.ev === 'exited' && e.uid === long.uid)).toHaveLength(1);
    m2.send({ op: 'end' });
    expect(await withTimeout(h.exit, WAIT_MS, 'helper exit')).toEqual({ code: 0, signal: null });
    await m2.closed;
    expect(fs.existsSync(sock)).toBe(false);
  });

  it('kills its tasks and exits when no master comes within keep-ms', async () => {
    const { h, sock } = await keptHelper(300);
    const s = spec('/bin/sleep', ['30']);
    h.send({ op: 'spawn', ...s });
    const pid = (await h.of('started', s.uid)).pid as number;
    const lost = Date.now();
    h.proc.stdin.end();
    expect(await withTimeout(h.exit, WAIT_MS, 'helper exit')).toEqual({ code: 0, signal: null });
    expect(Date.now() - lost).toBeGreaterThanOrEqual(295);
    expect(fs.existsSync(`/proc/${pid}`)).toBe(false); // reaped by the helper before it exited
    expect(fs.existsSync(sock)).toBe(false);
  });

  it('refuses --keep without --keep-ms (exit 64, saying so)', () => {
    const { file, args } = spawnerCommand(helper);
    const r = spawnSync(file, [...args, '--keep', path.join(dir, 'x.sock')], {
      input: '',
      encoding: 'utf8',
    });
    expect(r.status).toBe(64);
    expect(r.stderr).toMatch(/--keep/);
  });

  it('a task outlives its master killed by SIGKILL: the pool that attaches gets its exit once', async () => {
    const d = keepDir();
    const runs = path.join(dir, `runs.${++n}`);
    const s = spec('/bin/sh', ['-c', `echo ran >> ${runs}; sleep 1.5; echo done`]);
    const master = MasterProcess.start(helper, d, KEEP_MS, [s]);
    masters.push(master);
    const helperPid = await master.helper();
    const taskPid = await master.started(s.uid);
    await master.kill();

    const events = new Events();
    const exits: ExitedEvent[] = [];
    const handlers = {
      ...events.handlers,
      exited: (evs: ExitedEvent[]) => {
        exits.push(...evs.filter((e) => e.uid === s.uid));
        events.handlers.exited(evs);
      },
    };
    pool = await SpawnerPool.attach({ ...attachOpts(d, events), handlers });
    expect(await events.exit(s.uid)).toEqual({ uid: s.uid, exitCode: 0, signal: null });
    expect(fs.readFileSync(s.stdoutPath, 'utf8')).toBe('done\n');
    expect(fs.readFileSync(runs, 'utf8')).toBe('ran\n'); // it ran once
    await pool.close();
    pool = undefined;
    expect(exits).toHaveLength(1);
    await waitForExit(helperPid, WAIT_MS);
    expect(fs.existsSync(`/proc/${taskPid}`)).toBe(false);
    expect(fs.readdirSync(d)).toEqual([]);
  }, 20_000);

  it('an attached pool gets the held ends, adopts what runs, spawns, and its close ends all', async () => {
    const d = keepDir();
    const goPath = path.join(dir, `go.${++n}`);
    const go = fifo(goPath);
    const first = spec('/bin/sleep', ['30']);
    const next = { ...spec('/bin/sh', ['-c', `echo go > ${goPath}`]), after: first.uid };
    const long = spec('/bin/sleep', ['30']);
    const master = MasterProcess.start(helper, d, KEEP_MS, [first, next, long]);
    masters.push(master);
    const helperPid = await master.helper();
    const firstPid = await master.started(first.uid);
    const longPid = await master.started(long.uid);
    await master.kill();
    process.kill(firstPid, 'SIGTERM'); // it ends while no master is attached...
    await go.data(); // ...and `next` started behind it

    const events = new Events();
    const attachedAt = Date.now();
    pool = await SpawnerPool.attach(attachOpts(d, events));
    expect(await events.exit(first.uid)).toEqual({
      uid: first.uid,
      exitCode: null,
      signal: 'SIGTERM',
    });
    expect(events.times.get(first.uid)?.exited).toBeLessThan(attachedAt); // from the held events
    await events.exit(next.uid);
    const status = await pool.status();
    expect(status.running).toEqual([{ uid: long.uid, pid: longPid }]);
    expect(status.queued).toEqual([]);
    expect(status.ended.map((e) => [e.ev, e.uid])).toEqual([
      ['exited', first.uid],
      ['exited', next.uid],
    ]);
    expect(status.ended[0]).toMatchObject({ exitCode: null, signal: 'SIGTERM' });
    expect(pool.running()).toBe(1); // the task it did not spawn is its own now
    pool.kill(long.uid, 'SIGTERM');
    expect(await events.exit(long.uid)).toEqual({
      uid: long.uid,
      exitCode: null,
      signal: 'SIGTERM',
    });

    const more = spec('/bin/sh', ['-c', 'echo more']);
    const last = spec('/bin/sleep', ['30']);
    pool.spawn(more);
    pool.spawn(last);
    expect(await events.exit(more.uid)).toEqual({ uid: more.uid, exitCode: 0, signal: null });
    expect(fs.readFileSync(more.stdoutPath, 'utf8')).toBe('more\n');
    const lastPid = await events.pid(last.uid);
    await pool.close();
    pool = undefined;
    expect(events.exited.get(last.uid)).toEqual({
      uid: last.uid,
      exitCode: null,
      signal: 'SIGKILL',
    });
    await waitForExit(helperPid, WAIT_MS);
    for (const pid of [longPid, lastPid]) expect(fs.existsSync(`/proc/${pid}`)).toBe(false);
    expect(fs.readdirSync(d)).toEqual([]);
  }, 20_000);

  it('the helpers of a master killed end their tasks and exit when no pool attaches in time', async () => {
    const d = keepDir();
    const s = spec('/bin/sleep', ['30']);
    const master = MasterProcess.start(helper, d, 300, [s]);
    masters.push(master);
    const helperPid = await master.helper();
    const taskPid = await master.started(s.uid);
    await master.kill();
    await waitForExit(helperPid, WAIT_MS);
    expect(fs.existsSync(`/proc/${taskPid}`)).toBe(false); // reaped by the helper before it exited
    expect(fs.readdirSync(d)).toEqual([]);
  });

  it('a keep pool started here ends its helpers and their tasks at close', async () => {
    const events = new Events();
    const d = keepDir();
    pool = await SpawnerPool.start(attachOpts(d, events));
    const s = spec('/bin/sleep', ['30']);
    pool.spawn(s);
    const pid = await events.pid(s.uid);
    await pool.close();
    pool = undefined;
    expect(events.exited.get(s.uid)).toEqual({ uid: s.uid, exitCode: null, signal: 'SIGKILL' });
    expect(fs.existsSync(`/proc/${pid}`)).toBe(false);
  });

  it('attach rejects, naming the socket, when no helper listens there', async () => {
    const d = keepDir();
    const opts = attachOpts(d, new Events(), { readyTimeoutMs: 300 });
    await expect(SpawnerPool.attach(opts)).rejects.toThrow(
      `cannot reach the spawner helper at the keep socket '${d}/helper-0.sock': ENOENT`,
    );
    const { keep: _none, ...plain } = opts;
    await expect(SpawnerPool.attach(plain)).rejects.toThrow("needs the option 'keep'");
  });
});
