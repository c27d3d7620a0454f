import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type {
  ExitedEvent,
  FailedEvent,
  SpawnSpec,
  StartedEvent,
} from '../../../../src/components/executor/effects';
import { SpawnerPool, spawnerScript } from '../../../../src/components/executor/spawner-pool';
import { deferred, withTimeout } from '../../../../src/lib/deferred';
import { silentLogger, type Logger } from '../../../../src/lib/logger';

const WAIT_MS = 5_000;

/** Collects pool events and lets a test await a condition on them. */
class Events {
  readonly started = new Map<string, number>();
  readonly exited = new Map<string, ExitedEvent>();
  readonly failed = new Map<string, FailedEvent>();
  private waiters: { check: () => boolean; resolve: () => void }[] = [];

  readonly handlers = {
    started: (evs: StartedEvent[]) =>
      this.add(() => evs.forEach((e) => this.started.set(e.uid, e.pid))),
    exited: (evs: ExitedEvent[]) => this.add(() => evs.forEach((e) => this.exited.set(e.uid, e))),
    failed: (evs: FailedEvent[]) => this.add(() => evs.forEach((e) => this.failed.set(e.uid, e))),
  };

  until(what: string, check: () => boolean, ms = WAIT_MS): Promise<void> {
    if (check()) return Promise.resolve();
    const d = deferred<void>();
    this.waiters.push({ check, resolve: () => d.resolve() });
    return withTimeout(d.promise, ms, what);
  }

  async pid(uid: string): Promise<number> {
    await this.until(`start of ${uid}`, () => this.started.has(uid));
    return this.started.get(uid)!;
  }

  async exit(uid: string): Promise<ExitedEvent> {
    await this.until(`exit of ${uid}`, () => this.exited.has(uid));
    return this.exited.get(uid)!;
  }

  async failure(uid: string): Promise<FailedEvent> {
    await this.until(`failure of ${uid}`, () => this.failed.has(uid));
    return this.failed.get(uid)!;
  }

  private add(record: () => void): void {
    record();
    this.waiters = this.waiters.filter((w) => {
      if (!w.check()) return true;
      w.resolve();
      return false;
    });
  }
}

/** Logs into an array, so a test can see what a person would be told. */
function recordingLogger(lines: string[]): Logger {
  const log: Logger = {
    error: (m) => lines.push(`error ${m}`),
    warn: (m) => lines.push(`warn ${m}`),
    info: () => undefined,
    debug: () => undefined,
    child: () => log,
  };
  return log;
}

/**
 * A FIFO as the task's stdout: `data()` awaits the first output, `gone()` the moment every
 * process holding it (the whole group, grandchildren included) has exited.
 */
function fifoOutput(file: string): { data(): Promise<string>; gone(): Promise<void> } {
  execFileSync('mkfifo', [file]);
  const reader = fs.createReadStream(file, { encoding: 'utf8' });
  const data = new Promise<string>((resolve) => reader.once('data', (c) => resolve(String(c))));
  const gone = new Promise<void>((resolve) => reader.once('end', () => resolve()));
  return {
    data: () => withTimeout(data, WAIT_MS, 'first output'),
    gone: () => withTimeout(gone, WAIT_MS, 'end of output'),
  };
}

function errnoOf(fn: () => void): string | undefined {
  try {
    fn();
    return undefined;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code;
  }
}

describe('SpawnerPool', () => {
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
  });

  async function start(count = 1, logger: Logger = silentLogger): Promise<SpawnerPool> {
    events = new Events();
    pool = await SpawnerPool.start({ count, logger, handlers: events.handlers });
    return pool;
  }

  /** A spec with a fresh uid and sandbox. */
  function spec(
    executable: string,
    args: string[] = [],
    env: Record<string, string> = {},
  ): SpawnSpec {
    const uid = `task.${++n}`;
    const sandbox = path.join(dir, uid);
    fs.mkdirSync(sandbox);
    const stdoutPath = path.join(sandbox, 'stdout');
    const stderrPath = path.join(sandbox, 'stderr');
    return { uid, executable, args, env, cwd: sandbox, stdoutPath, stderrPath };
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
    const out = fifoOutput(s.stdoutPath);
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
      const out = fifoOutput(s.stdoutPath);
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

  it('fails the tasks of a helper that dies and kills their process groups', async () => {
    const lines: string[] = [];
    const p = await start(1, recordingLogger(lines));
    const s = spec('/bin/sleep', ['30']);
    const out = fifoOutput(s.stdoutPath);
    p.spawn(s);
    const pid = await events.pid(s.uid);
    const helperPid = Number(
      fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[1],
    );
    process.kill(helperPid, 'SIGKILL');
    const failure = await events.failure(s.uid);
    expect(failure.code).toBe('E_SPAWNER_DIED');
    expect(failure.message).toBe(`the spawner helper (pid ${helperPid}) died (killed by SIGKILL)`);
    expect(lines).toContain('error spawner helper died');
    await out.gone();
    const late = spec('/bin/true');
    p.spawn(late);
    expect((await events.failure(late.uid)).message).toBe('no spawner helper is running');
  });
});

describe('spawner helper', () => {
  it('answers a bad line with an error event, keeps serving and exits when stdin ends', async () => {
    const helper = spawn(process.execPath, [spawnerScript()], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let out = '';
    const lines = (): unknown[] =>
      out
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as unknown);
    const got = deferred<void>();
    helper.stdout.setEncoding('utf8');
    helper.stdout.on('data', (c: string) => {
      out += c;
      if (lines().some((e) => (e as { ev: string }).ev === 'failed')) got.resolve();
    });
    const exited = new Promise<number | null>((resolve) => helper.once('exit', resolve));
    try {
      await talk();
    } finally {
      helper.kill('SIGKILL'); // no-op once it exited; stops it if an expectation failed
    }

    async function talk(): Promise<void> {
      helper.stdin.write('not json\n{"op":"explode"}\n');
      helper.stdin.write('{"op":"kill","uid":"nobody","signal":"SIGTERM"}\n');
      helper.stdin.write(
        JSON.stringify({
          op: 'spawn',
          uid: 'u1',
          executable: '/no/exe',
          args: [],
          env: {},
          cwd: '/',
          stdoutPath: '/dev/null',
          stderrPath: '/dev/null',
        }) + '\n',
      );
      await withTimeout(got.promise, WAIT_MS, 'failed event');
      helper.stdin.end();
      expect(await withTimeout(exited, WAIT_MS, 'helper exit')).toBe(0);
      expect(lines()).toEqual([
        { ev: 'ready', pid: helper.pid },
        { ev: 'error', message: 'not JSON: not json' },
        { ev: 'error', message: 'bad request: {"op":"explode"}' },
        { ev: 'failed', uid: 'u1', code: 'ENOENT', message: 'no such file or directory' },
      ]);
    }
  });
});
