import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { DeliveredCounters } from '../../../src/client/resume/delivered';
import { Journal, type JournalEntry } from '../../../src/client/resume/journal';
import { PilotManager } from '../../../src/client/pilot-manager';
import { Session } from '../../../src/client/session';
import { TaskManager } from '../../../src/client/task-manager';
import { deferred, withTimeout } from '../../../src/lib/deferred';
import { TASK_STATES } from '../../../src/states/task-model';
import { StoreUnwritableError, type StoreCondition } from '../../../src/updater/state-store';
import { waitForExit } from '../../support/processes';
import { padStreamFile } from '../../support/stream-page';
import { collect } from '../../support/tail-check';
import { Tmpfs, tmpfsPerTest, tmpfsUnavailable } from '../../support/tmpfs';

const ORDER = TASK_STATES.slice(0, TASK_STATES.indexOf('DONE') + 1);
const TASKS = 20;

const title =
  tmpfsUnavailable === undefined
    ? 'a session on a full disk (a real 2 MB tmpfs)'
    : `a session on a full disk (skipped: ${tmpfsUnavailable})`;
const d = tmpfsUnavailable === undefined ? describe : describe.skip;

/**
 * Tasks wait on a shared lock of `file` while the test holds it exclusively (a `flock` process
 * the test owns), so they are all in the agent when the disk fills, and end once it is let go.
 */
class Gate {
  private constructor(
    readonly file: string,
    private readonly holder: ChildProcess,
  ) {}

  static async close(dir: string): Promise<Gate> {
    const file = path.join(dir, 'gate');
    const holder = spawn('flock', ['-x', file, '-c', 'echo held; exec cat'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const held = deferred<void>();
    holder.stdout.once('data', () => held.resolve());
    holder.once('error', (e) => held.reject(e));
    holder.once('exit', () => held.reject(new Error('the gate holder exited before holding')));
    await withTimeout(held.promise, 10_000, 'the gate lock held');
    return new Gate(file, holder);
  }

  get pid(): number {
    return this.holder.pid!;
  }

  /** Lets the tasks through: the holder ends, and the lock with it. */
  open(): void {
    this.holder.stdin?.end();
  }

  kill(): void {
    if (this.holder.exitCode === null && this.holder.signalCode === null) {
      this.holder.kill('SIGKILL');
    }
  }
}

/** The session's store conditions as they come, and waits for the next of a kind. */
function storeEvents(session: Session): {
  seen: (StoreUnwritableError | undefined)[];
  unwritable(ms?: number): Promise<StoreUnwritableError>;
  writable(ms?: number): Promise<void>;
} {
  const seen: (StoreUnwritableError | undefined)[] = [];
  const waiters: { error: boolean; resolve: (e: StoreUnwritableError | undefined) => void }[] = [];
  // an embedded session's store can only be unwritable (unreachable is MongoDB's)
  const unwritable = (e: StoreCondition | undefined): StoreUnwritableError | undefined => {
    if (e === undefined || e instanceof StoreUnwritableError) return e;
    throw new Error(`an embedded store reported ${e.code}`);
  };
  session.onStoreError((c) => {
    const e = unwritable(c);
    seen.push(e);
    for (const w of waiters.splice(0)) {
      if (w.error === (e !== undefined)) w.resolve(e);
      else waiters.push(w);
    }
  });
  const next = (error: boolean, ms: number): Promise<StoreUnwritableError | undefined> => {
    if ((session.storeError !== undefined) === error) {
      return Promise.resolve(unwritable(session.storeError));
    }
    const d = deferred<StoreUnwritableError | undefined>();
    waiters.push({ error, resolve: (e) => d.resolve(e) });
    return withTimeout(d.promise, ms, error ? 'the store unwritable' : 'the store writable');
  };
  return {
    seen,
    unwritable: async (ms = 30_000) => (await next(true, ms))!,
    writable: async (ms = 30_000) => void (await next(false, ms)),
  };
}

/** The pid of each agent the session started, from its journal. */
function agentPids(dir: string): number[] {
  return fs
    .readFileSync(path.join(dir, 'journal.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.includes('"t":"agent"') && l.includes('"pid"'))
    .map((l) => (JSON.parse(l) as { pid: number }).pid);
}

d(title, () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) {
      try {
        await c();
      } catch (e) {
        process.stderr.write(`full-disk cleanup: ${(e as Error).message}\n`);
      }
    }
  });

  /**
   * A session whose directory is on a fresh 2 MB tmpfs, a local pilot (active), and TASKS tasks
   * held in the agent by a gate; everything is undone after the test, whatever happened.
   */
  async function gatedSession() {
    const fsys = Tmpfs.mount('2m');
    cleanups.push(() => fsys.unmount());
    const gateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-gate-'));
    cleanups.push(() => fs.rmSync(gateDir, { recursive: true, force: true }));
    const session = await Session.open({ dir: fsys.dir });
    let closed = false;
    cleanups.push(async () => {
      if (!closed) await session.close().catch(() => undefined);
      for (const pid of agentPids(session.dir)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone, as it should be
        }
      }
    });
    const events = storeEvents(session);
    const pmgr = new PilotManager(session, { shutdownGraceMs: 5_000 });
    const tmgr = new TaskManager(session);
    const [pilot] = await pmgr.submitPilots([{ resource: 'local', cores: 2, runtimeMin: 5 }]);
    tmgr.addPilots([pilot!]);
    await pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 30_000 });
    const seen = new Map<string, string[]>();
    tmgr.onState((t, s) => seen.set(t.uid, [...(seen.get(t.uid) ?? []), s]));
    const gate = await Gate.close(gateDir);
    cleanups.push(() => gate.kill());
    // they print nothing: their end frames fit in what the stream files' first pages have left
    const tasks = await tmgr.submitTasks(
      Array.from({ length: TASKS }, () => ({
        executable: '/usr/bin/flock',
        arguments: ['-s', gate.file, 'true'],
      })),
    );
    // two run (2 cores), the rest wait for cores: all held by the gate
    await tmgr.waitTasks({ states: ['AGENT_SCHEDULING', 'AGENT_EXECUTING'], timeoutMs: 30_000 });
    return {
      fsys,
      session,
      tmgr,
      tasks,
      seen,
      events,
      gate,
      close: () => {
        closed = true;
        return session.close();
      },
    };
  }

  it('surfaces the full disk (event and API error), and delivers every state once space is back', async () => {
    const { fsys, session, tmgr, tasks, seen, events, gate, close } = await gatedSession();
    fsys.fill();
    gate.open(); // the tasks end: their notifications meet the full disk

    const err = await events.unwritable();
    expect(err).toMatchObject({ name: 'StoreUnwritableError', code: 'E_STORE_UNWRITABLE' });
    expect(err.errno).toBe('ENOSPC');
    expect(err.path.startsWith(session.dir)).toBe(true);
    expect(err.message).toContain('ENOSPC (no space left on device)');
    // while it lasts (the event just came), new work and new waits are refused with it
    const submit = tmgr.submitTasks([{ executable: '/bin/true' }]);
    const wait = tmgr.waitTasks({ timeoutMs: 60_000 });
    await expect(submit).rejects.toMatchObject({ code: 'E_STORE_UNWRITABLE', errno: 'ENOSPC' });
    await expect(wait).rejects.toMatchObject({ code: 'E_STORE_UNWRITABLE', errno: 'ENOSPC' });
    expect(tmgr.list()).toHaveLength(TASKS); // the refused task was not taken

    fsys.free();
    await events.writable();
    await tmgr.waitTasks({ timeoutMs: 60_000 });
    for (const t of tasks) {
      expect([t.uid, t.state, t.exitCode]).toEqual([t.uid, 'DONE', 0]);
      expect(seen.get(t.uid)).toEqual(ORDER); // every callback once, in model order
    }
    expect(events.seen.at(-1)).toBeUndefined();
    expect(events.seen.filter((e) => e !== undefined).every((e) => e.errno === 'ENOSPC')).toBe(
      true,
    );
    const agents = agentPids(session.dir);
    await withTimeout(close(), 60_000, 'session close');
    for (const pid of [...agents, gate.pid]) await waitForExit(pid, 10_000);
  }, 120_000);

  it('closes within a bound when space never comes back, counting the notifications lost', async () => {
    const { fsys, session, tmgr, events, gate, close } = await gatedSession();
    fsys.fill();
    gate.open();
    await events.unwritable();
    const agents = agentPids(session.dir);
    const started = Date.now();
    const closing = close();
    const lost = await withTimeout(
      closing.then(
        () => undefined,
        (e: unknown) => e as StoreUnwritableError,
      ),
      60_000,
      'close of a session whose store cannot write',
    );
    expect(lost).toMatchObject({ code: 'E_STORE_UNWRITABLE', errno: 'ENOSPC' });
    expect(lost!.lost).toBeGreaterThan(0);
    expect(lost!.message).toContain(`${lost!.lost} notifications were lost`);
    expect(events.seen.at(-1)).toBe(lost); // listeners are told too
    expect(Date.now() - started).toBeLessThan(30_000);
    for (const pid of [...agents, gate.pid]) await waitForExit(pid, 10_000);
    await expect(tmgr.submitTasks([{ executable: '/bin/true' }])).rejects.toMatchObject({
      code: 'E_USAGE', // closed
    });
  }, 120_000);

  /** A session on the usual disk, and a 1 MiB tmpfs for its pilot's sandbox (to fill). */
  async function sessionBesideSmallDisk(): Promise<{
    sandboxes: Tmpfs;
    pmgr: PilotManager;
    tmgr: TaskManager;
  }> {
    const sandboxes = Tmpfs.mount('1m');
    cleanups.push(() => sandboxes.unmount());
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-it-'));
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const session = await Session.open({ dir });
    cleanups.push(() => session.close());
    const pmgr = new PilotManager(session, { shutdownGraceMs: 5_000 });
    return { sandboxes, pmgr, tmgr: new TaskManager(session) };
  }

  it('refuses to open a session on a full disk, naming the file, and leaves nothing open', async () => {
    const fsys = Tmpfs.mount('2m');
    cleanups.push(() => fsys.unmount());
    fsys.fill();
    await expect(Session.open({ dir: fsys.dir })).rejects.toMatchObject({
      code: 'E_STORE_UNWRITABLE',
      errno: 'ENOSPC',
      // the first file a new session writes: its key (or, insecure, its journal)
      path: expect.stringMatching(/session\.key$/),
    });
  });

  it("ends FAILED, with the errno, an output 'files' task whose sandbox cannot be made on a full disk", async () => {
    const { sandboxes, pmgr, tmgr } = await sessionBesideSmallDisk();
    const [pilot] = await pmgr.submitPilots([
      // task.json: a file to write in the sandbox (a directory alone may still fit)
      {
        resource: 'local',
        cores: 1,
        runtimeMin: 5,
        sandbox: `${sandboxes.dir}/pilot`,
        agent: { taskJson: true },
      },
    ]);
    tmgr.addPilots([pilot!]);
    await pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 30_000 });
    sandboxes.fill(); // agent.log too: the agent goes on without it
    const [t] = await tmgr.submitTasks([{ executable: '/bin/true', output: 'files' }]);
    await tmgr.waitTasks({ timeoutMs: 30_000 });
    expect(t!.state).toBe('FAILED');
    expect(t!.reason).toMatchObject({ code: 'E_STAGING', detail: { errno: 'ENOSPC' } });
    expect(t!.reason!.message).toContain('cannot create the task sandbox');
  }, 60_000);

  it('ends a streamed task whose output cannot be written by its exit, with a warning of what was lost, and its follower ends with it', async () => {
    const { sandboxes, pmgr, tmgr } = await sessionBesideSmallDisk();
    const pilotDir = `${sandboxes.dir}/pilot`;
    const [pilot] = await pmgr.submitPilots([
      { resource: 'local', cores: 1, runtimeMin: 5, sandbox: pilotDir },
    ]);
    tmgr.addPilots([pilot!]);
    await pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 30_000 });
    const streams = path.join(pilotDir, 'output');
    for (const f of fs.readdirSync(streams)) padStreamFile(path.join(streams, f));
    sandboxes.fill(); // agent.log too: the agent goes on without it
    const [ok, bad] = await tmgr.submitTasks([
      { executable: '/bin/sh', arguments: ['-c', 'echo hello; echo oops >&2'], retries: 2 },
      { executable: '/bin/sh', arguments: ['-c', 'echo bye; exit 3'] },
    ]);
    const follower = collect(tmgr.tail(ok!.uid, { follow: true }));
    await tmgr.waitTasks({ timeoutMs: 30_000 });
    // it exited 0: DONE, run once (a retry would have run it again), its loss a warning
    expect([ok!.state, ok!.output, ok!.exitCode, ok!.attempt]).toEqual(['DONE', 'stream', 0, 1]);
    expect(ok!.reason).toBeUndefined();
    const lost = new RegExp(
      `^cannot write the output stream '${streams}/spawner\\.\\d+\\.\\d+\\.pfout': no space left on device \\(ENOSPC\\)$`,
    );
    expect(ok!.outputLost).toMatch(lost);
    expect([ok!.stdout, ok!.stderr]).toEqual(['hello\n', 'oops\n']); // the tails came with its exit
    expect(await withTimeout(follower, 10_000, 'the follower')).toEqual([]);
    // a non-zero exit still fails, for its exit
    expect([bad!.state, bad!.exitCode, bad!.reason?.code]).toEqual(['FAILED', 3, 'E_EXIT_CODE']);
    expect(bad!.outputLost).toMatch(lost);
    // space back: the next task's output is written and read
    sandboxes.free();
    const [next] = await tmgr.submitTasks([{ executable: '/bin/echo', arguments: ['back'] }]);
    await tmgr.waitTasks({ uids: [next!.uid], timeoutMs: 30_000 });
    expect(next!.state).toBe('DONE');
    expect(next!.outputLost).toBeUndefined();
    expect(await collect(tmgr.tail(next!.uid))).toEqual(['back']);
  }, 60_000);
});

d(`${title}: the journal and the delivered counters`, () => {
  const mount = tmpfsPerTest('256k');

  it('refuses what the user asks, holds what happened, and leaves no torn line', () => {
    const fsys = mount();
    const journal = Journal.create(fsys.dir);
    const told: (StoreUnwritableError | undefined)[] = [];
    journal.onUnwritable((e) => told.push(e));
    const pilots: JournalEntry = { t: 'pilots-added', mgr: 'tmgr.0000', pilots: ['p1'] };
    journal.append(pilots);
    const size = fs.statSync(journal.file).size;
    fsys.fill();
    const tasks: JournalEntry = {
      t: 'tasks',
      mgr: 'tmgr.0000',
      tasks: Array.from({ length: 200 }, (_, i) => [`t${i}`, { executable: '/bin/true' }]),
    };
    expect(() => journal.append(tasks)).toThrow(
      expect.objectContaining({ code: 'E_STORE_UNWRITABLE', errno: 'ENOSPC', path: journal.file }),
    );
    expect(fs.statSync(journal.file).size).toBe(size); // cut back: no torn line
    expect(journal.unwritable).toBeUndefined(); // refused, not held
    const agent: JournalEntry = { t: 'agent', pilot: 'p1', pid: 4242, nodes: [] };
    const big: JournalEntry = {
      t: 'agent',
      pilot: 'p1',
      nodes: Array.from({ length: 200 }, (_, i) => ({ name: `node${i}`, cores: 64, gpus: 8 })),
    };
    // what happened is never refused: held when it does not fit (big does not)
    journal.append(agent);
    journal.append(big);
    expect(journal.unwritable).toMatchObject({ errno: 'ENOSPC' });
    expect(told).toHaveLength(1);
    expect(journal.retry()).toBe(false);
    fsys.free();
    expect(journal.retry()).toBe(true);
    expect(told).toEqual([expect.objectContaining({ errno: 'ENOSPC' }), undefined]);
    expect(Journal.read(fsys.dir).entries).toEqual([pilots, agent, big]);
  });

  it('keeps counts it cannot write in memory and writes them once it can', () => {
    const fsys = mount();
    const counters = DeliveredCounters.open(fsys.dir);
    const told: (StoreUnwritableError | undefined)[] = [];
    counters.onUnwritable((e) => told.push(e));
    counters.set(0, 5);
    fsys.fill();
    counters.set(600, 1); // slot 600 lies in the file's second page: the disk has none left
    expect(counters.unwritable).toMatchObject({ errno: 'ENOSPC', path: `${fsys.dir}/delivered` });
    expect(counters.get(600)).toBe(1);
    counters.set(600, 2);
    expect(told).toHaveLength(1);
    fsys.free();
    counters.set(0, 6);
    expect(told.at(-1)).toBeUndefined();
    counters.close();
    const again = DeliveredCounters.open(fsys.dir);
    expect([again.get(0), again.get(600)]).toEqual([6, 2]);
    again.close();
  });
});
