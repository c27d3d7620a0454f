/**
 * Queued starts (a spawn `after` a task: it starts the moment that one's main process is reaped,
 * without the agent) and held events (--hold-ms) in both spawner helpers, spoken to directly and
 * through SpawnerPool (issue 17). Tasks that must keep running read a line from a gate, a FIFO
 * the test holds open read-write (so opening it never blocks): they end when the test writes
 * their line, whether or not they have opened the FIFO yet.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { SpawnSpec } from '../../../../../src/components/executor/effects';
import {
  SpawnerPool,
  type SpawnerHelper,
} from '../../../../../src/components/executor/process/spawner-pool';
import { silentLogger } from '../../../../../src/lib/logger';
import { pidWritten } from '../../../../support/pid-file';
import { waitForExit } from '../../../../support/processes';
import {
  Events,
  RawHelper,
  WAIT_MS,
  describeEachHelper,
  procIds,
  tempSandboxes,
  type HelperEvent,
} from './spawner-fixtures';

const { dir: tempDir, spec } = tempSandboxes('pf-after-');

interface Gate {
  path: string;
  /** Lets one task that waits on it go (a line). */
  release(): void;
  close(): void;
}

const gates: Gate[] = [];
let gateCount = 0;

/** A FIFO held open read-write: a line written stays there until a task reads it. */
function gate(): Gate {
  const file = path.join(tempDir(), `gate.${++gateCount}`);
  execFileSync('mkfifo', [file]);
  let fd: number | undefined = fs.openSync(file, 'r+');
  const g = {
    path: file,
    release: () => void fs.writeSync(fd!, 'go\n'),
    close: () => {
      if (fd !== undefined) fs.closeSync(fd);
      fd = undefined;
    },
  };
  gates.push(g);
  return g;
}

/** A task that runs until `g` is released (sh's read takes one line, byte by byte). */
function blocked(g: Gate): SpawnSpec {
  return spec('/bin/sh', ['-c', `read line < ${g.path}`]);
}

function after(s: SpawnSpec, uid: string): SpawnSpec {
  return { ...s, after: uid };
}

function request(s: SpawnSpec): object {
  return { op: 'spawn', ...s };
}

/**
 * Resolves once each task wrote its pid into its stdout and was reaped by its parent (the
 * helper): nothing else shows it while the helper holds its events.
 */
async function reaped(specs: SpawnSpec[], ms = WAIT_MS): Promise<void> {
  for (const s of specs) {
    const out = s.stdoutPath!;
    const pid = await pidWritten(path.dirname(out), path.basename(out), ms);
    await waitForExit(pid, ms, { reaped: true });
  }
}

/** The chunk (one write of the helper) holding `ev` of `uid`, and where in it. */
function chunkOf(h: RawHelper, ev: string, uid: string): { chunk: HelperEvent[]; at: number } {
  for (const chunk of h.chunks) {
    const at = chunk.findIndex((e) => e.ev === ev && e.uid === uid);
    if (at >= 0) return { chunk, at };
  }
  throw new Error(`no ${ev} of ${uid}`);
}

function about(h: RawHelper, uid: string): string[] {
  return h.events.filter((e) => e.uid === uid).map((e) => e.ev);
}

afterEach(() => {
  for (const g of gates.splice(0)) g.close();
});

describeEachHelper('queued starts in a spawner helper', (kind: SpawnerHelper) => {
  let h: RawHelper | undefined;

  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  async function start(more: string[] = []): Promise<RawHelper> {
    h = await RawHelper.start(kind, more);
    return h;
  }

  /** A running A held by a gate, and `n` `/bin/true` queued after it, each after the last. */
  async function queuedChain(
    n: number,
  ): Promise<{ r: RawHelper; g: Gate; a: SpawnSpec; q: SpawnSpec[] }> {
    const r = await start();
    const g = gate();
    const a = blocked(g);
    const q: SpawnSpec[] = [];
    for (let i = 0; i < n; i++) q.push(after(spec('/bin/true'), (q[i - 1] ?? a).uid));
    r.send(request(a), ...q.map(request));
    await r.of('started', a.uid);
    return { r, g, a, q };
  }

  it('starts B after a running A only once A is reaped, in the write of A exit', async () => {
    const r = await start();
    const g = gate();
    const a = blocked(g);
    r.send(request(a));
    await r.of('started', a.uid);
    const b = after(spec('/bin/true'), a.uid);
    const x = spec('/bin/true');
    r.send(request(b), request(x));
    await r.of('exited', x.uid); // requests are handled in order: B was seen before X
    expect(about(r, b.uid)).toEqual([]);
    g.release();
    const started = await r.of('started', b.uid);
    const exited = await r.of('exited', a.uid);
    const { chunk, at } = chunkOf(r, 'exited', a.uid);
    expect(chunk.indexOf(started)).toBeGreaterThan(at);
    expect(started.t as number).toBeGreaterThanOrEqual(exited.t as number);
    expect((await r.of('exited', b.uid)).exitCode).toBe(0);
  });

  it('starts at once after a uid it does not know, that ended, or that failed', async () => {
    const r = await start();
    const unknown = after(spec('/bin/true'), 'no-such-task');
    r.send(request(unknown));
    await r.of('exited', unknown.uid);
    const ended = after(spec('/bin/true'), unknown.uid);
    r.send(request(ended));
    await r.of('exited', ended.uid);
    const broken = spec('/no/such/exe');
    r.send(request(broken));
    await r.of('failed', broken.uid);
    const next = after(spec('/bin/true'), broken.uid);
    r.send(request(next));
    expect((await r.of('exited', next.uid)).exitCode).toBe(0);
  });

  it('runs a chain C after B after A in order', async () => {
    const { r, g, a, q } = await queuedChain(2);
    const [b, c] = q as [SpawnSpec, SpawnSpec];
    g.release();
    const cExit = await r.of('exited', c.uid);
    const t = (ev: string, uid: string): number =>
      r.events.find((e) => e.ev === ev && e.uid === uid)!.t as number;
    expect(t('started', b.uid)).toBeGreaterThanOrEqual(t('exited', a.uid));
    expect(t('started', c.uid)).toBeGreaterThanOrEqual(t('exited', b.uid));
    expect(cExit.exitCode).toBe(0);
    const order = r.events.filter((e) => e.ev !== 'ready').map((e) => `${e.ev} ${e.uid}`);
    expect(order.indexOf(`exited ${b.uid}`)).toBeLessThan(order.indexOf(`started ${c.uid}`));
  });

  it('drops a queued B on a kill (ECANCELED); C after B then follows A', async () => {
    const { r, g, a, q } = await queuedChain(2);
    const [b, c] = q as [SpawnSpec, SpawnSpec];
    r.send({ op: 'kill', uid: b.uid, signal: 'SIGTERM' });
    const failed = await r.of('failed', b.uid);
    expect({ code: failed.code, message: failed.message }).toEqual({
      code: 'ECANCELED',
      message: 'canceled before it started',
    });
    expect(about(r, c.uid)).toEqual([]);
    g.release();
    await r.of('exited', c.uid);
    const { chunk, at } = chunkOf(r, 'exited', a.uid);
    expect(chunk.findIndex((e) => e.ev === 'started' && e.uid === c.uid)).toBeGreaterThan(at);
    expect(about(r, b.uid)).toEqual(['failed']);
    expect(about(r, a.uid)).toEqual(['started', 'exited']);
  });

  it('kills B as a running task once A ended: an exit by the signal, no ECANCELED', async () => {
    const r = await start();
    const ga = gate();
    const gb = gate();
    const a = blocked(ga);
    const b = after(blocked(gb), a.uid);
    r.send(request(a), request(b));
    await r.of('started', a.uid);
    ga.release();
    await r.of('started', b.uid);
    r.send({ op: 'kill', uid: b.uid, signal: 'SIGTERM' });
    expect((await r.of('exited', b.uid)).signal).toBe('SIGTERM');
    expect(about(r, b.uid)).toEqual(['started', 'exited']);
  });

  it('refuses a second spawn of a queued uid (EEXIST) and keeps the queued one', async () => {
    const r = await start();
    const g = gate();
    const a = blocked(g);
    const b = after(spec('/bin/true'), a.uid);
    r.send(request(a), request(b), { ...request(b), after: 'no-such-task' });
    const failed = await r.of('failed', b.uid);
    expect({ code: failed.code, message: failed.message }).toEqual({
      code: 'EEXIST',
      message: `task '${b.uid}' is already queued`,
    });
    g.release();
    expect((await r.of('exited', b.uid)).exitCode).toBe(0);
  });

  it('fails its queued spawns (ECANCELED) when its stdin ends', async () => {
    const { r, a, q } = await queuedChain(1);
    const [b] = q as [SpawnSpec];
    expect(await r.end()).toEqual({ code: 0, signal: null });
    const failed = r.events.find((e) => e.ev === 'failed' && e.uid === b.uid);
    expect(failed?.code).toBe('ECANCELED');
    expect(failed?.message).toBe('canceled before it started: the spawner helper is stopping');
    expect(about(r, a.uid)).toEqual(['started', 'exited']);
  });

  describe('held events (--hold-ms)', () => {
    it('holds every event while a spawn is queued, then writes them at once', async () => {
      const r = await start(['--hold-ms', '60000']);
      const g = gate();
      const a = blocked(g);
      r.send(request(a));
      await r.of('started', a.uid); // nothing queued yet: at once
      const xs = [1, 2, 3].map(() => spec('/bin/sh', ['-c', 'echo $$']));
      const b = after(spec('/bin/true'), a.uid);
      r.send(request(b), ...xs.map(request));
      await reaped(xs);
      await new Promise((resolve) => setImmediate(resolve)); // whatever the pipe had is read
      expect(xs.flatMap((x) => about(r, x.uid))).toEqual([]);
      g.release(); // A ends, B starts: nothing is queued any more
      await r.of('started', b.uid);
      const { chunk } = chunkOf(r, 'exited', a.uid);
      const inChunk = (ev: string, uid: string): boolean =>
        chunk.some((e) => e.ev === ev && e.uid === uid);
      for (const x of xs) {
        expect([inChunk('started', x.uid), inChunk('exited', x.uid)]).toEqual([true, true]);
      }
      expect(inChunk('started', b.uid)).toBe(true);
    });

    it('sends events at once while nothing is queued', async () => {
      const r = await start(['--hold-ms', '60000']);
      const x = spec('/bin/true');
      r.send(request(x));
      expect((await r.of('exited', x.uid)).exitCode).toBe(0);
    });

    it('never holds an error event', async () => {
      const r = await start(['--hold-ms', '60000']);
      const g = gate();
      const a = blocked(g);
      r.send(request(a));
      await r.of('started', a.uid);
      r.send(request(after(spec('/bin/true'), a.uid)), request(spec('/bin/true')));
      r.write('not json\n');
      expect((await r.next('error', (e) => e.ev === 'error')).message).toBe('not JSON: not json');
      expect(about(r, a.uid)).toEqual(['started']); // B is still queued
    });

    it('writes held events once the hold is over, while a spawn is still queued', async () => {
      const r = await start(['--hold-ms', '200']);
      const g = gate();
      const a = blocked(g);
      r.send(request(a));
      await r.of('started', a.uid);
      const x = spec('/bin/true');
      r.send(request(after(spec('/bin/true'), a.uid)), request(x));
      expect((await r.of('exited', x.uid)).exitCode).toBe(0);
      expect(about(r, a.uid)).toEqual(['started']);
    });
  });
});

describeEachHelper('SpawnerPool and spawns after a task', (helper: SpawnerHelper) => {
  let pool: SpawnerPool | undefined;
  let events: Events;

  afterEach(async () => {
    await pool?.close();
    pool = undefined;
  });

  async function start(holdMs?: number): Promise<SpawnerPool> {
    events = new Events();
    pool = await SpawnerPool.start({
      count: 2,
      logger: silentLogger,
      handlers: events.handlers,
      helper,
      ...(holdMs === undefined ? {} : { holdMs }),
    });
    return pool;
  }

  it("sends a spawn after a task to that task's helper, which starts it when it ends", async () => {
    const p = await start();
    const ga = gate();
    const gb = gate();
    const a = blocked(ga);
    p.spawn(a);
    const home = procIds(await events.pid(a.uid)).ppid;
    const b = after(blocked(gb), a.uid); // the least loaded helper is the other one
    p.spawn(b);
    ga.release();
    const bPid = await events.pid(b.uid);
    expect(procIds(bPid).ppid).toBe(home);
    await events.exit(a.uid);
    expect(events.times.get(b.uid)!.started!).toBeGreaterThanOrEqual(
      events.times.get(a.uid)!.exited!,
    );
    gb.release();
    expect((await events.exit(b.uid)).exitCode).toBe(0);
  });

  it('starts a spawn after a task it does not run at once, on any helper', async () => {
    const p = await start();
    const x = after(spec('/bin/true'), 'no-such-task');
    p.spawn(x);
    expect((await events.exit(x.uid)).exitCode).toBe(0);
  });

  it('fails the queued spawns of a helper that died (E_SPAWNER_DIED)', async () => {
    const p = await start(250);
    const g = gate();
    const a = blocked(g);
    p.spawn(a);
    const home = procIds(await events.pid(a.uid)).ppid;
    const cmdline = fs.readFileSync(`/proc/${home}/cmdline`, 'utf8').split('\0');
    expect(cmdline.slice(cmdline.indexOf('--hold-ms'), cmdline.indexOf('--hold-ms') + 2)).toEqual([
      '--hold-ms',
      '250',
    ]);
    const b = after(spec('/bin/true'), a.uid);
    const c = after(spec('/bin/true'), b.uid);
    p.spawn(b);
    p.spawn(c);
    process.kill(home, 'SIGKILL');
    for (const uid of [a.uid, b.uid, c.uid]) {
      expect((await events.failure(uid)).code).toBe('E_SPAWNER_DIED');
    }
    expect(events.started.has(b.uid) || events.started.has(c.uid)).toBe(false);
    // A spawn after a task of the dead helper starts at once on another.
    const d = after(spec('/bin/true'), a.uid);
    p.spawn(d);
    expect((await events.exit(d.uid)).exitCode).toBe(0);
  });
});
