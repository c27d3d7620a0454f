/**
 * Shared by the spawner helper tests: both helpers (the C pf-spawner and the Node
 * process/helper/main.ts), an event collector for SpawnerPool, FIFOs that tell when a task's whole
 * process tree has exited, and a raw client of one helper speaking its line protocol.
 */
import { afterAll, beforeAll, describe } from '@jest/globals';
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type {
  ExitedEvent,
  FailedEvent,
  FileSpawnSpec,
  StartedEvent,
} from '../../../../../src/components/executor/effects';
import {
  SPAWNER_ENV,
  nativeSpawner,
  spawnerCommand,
  type SpawnerHelper,
} from '../../../../../src/components/executor/process/spawner-pool';
import type {
  HelperEvent as ProtocolEvent,
  HelperRequest,
} from '../../../../../src/components/executor/process/helper/protocol';
import { deferred, withTimeout } from '../../../../../src/lib/deferred';
import type { Logger } from '../../../../../src/lib/logger';

export const WAIT_MS = 5_000;

const NATIVE_BUILT = nativeSpawner() !== undefined;

/**
 * `describe` for each helper: the C one is skipped, saying so, when it is not built (no C
 * compiler when `npm run build` ran; scripts/system-deps.sh installs gcc as root).
 */
export function describeEachHelper(title: string, body: (helper: SpawnerHelper) => void): void {
  for (const helper of ['native', 'node'] as const) {
    if (helper === 'native' && !NATIVE_BUILT) {
      describe.skip(`${title} [native helper] (skipped: dist/native/pf-spawner not built)`, () =>
        body(helper));
    } else {
      describe(`${title} [${helper} helper]`, () => body(helper));
    }
  }
}

/**
 * Makes the pools started in the enclosing describe without a `helper` option (ExecutorHarness's)
 * run `helper`, through the PILOTFISH_SPAWNER variable; restored afterwards.
 */
export function useHelperEnv(helper: SpawnerHelper): void {
  const saved = process.env[SPAWNER_ENV];
  beforeAll(() => {
    process.env[SPAWNER_ENV] = helper;
  });
  afterAll(() => {
    if (saved === undefined) delete process.env[SPAWNER_ENV];
    else process.env[SPAWNER_ENV] = saved;
  });
}

/** Collects pool events and lets a test await a condition on them. */
export class Events {
  readonly started = new Map<string, number>();
  /** When each task started and ended, as the helper measured (epoch ms). */
  readonly times = new Map<string, { started?: number | undefined; exited?: number | undefined }>();
  readonly exited = new Map<string, ExitedEvent>();
  readonly failed = new Map<string, FailedEvent>();
  private waiters: { check: () => boolean; resolve: () => void }[] = [];

  readonly handlers = {
    started: (evs: StartedEvent[]) =>
      this.add(() =>
        evs.forEach((e) => {
          this.started.set(e.uid, e.pid);
          this.times.set(e.uid, { started: e.t });
        }),
      ),
    exited: (evs: ExitedEvent[]) =>
      this.add(() =>
        evs.forEach(({ t, ...e }) => {
          this.exited.set(e.uid, e);
          this.times.set(e.uid, { ...this.times.get(e.uid), exited: t });
        }),
      ),
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

  /** The exit (without its time, which is checked: measured, after the start, not ahead of now). */
  async exit(uid: string): Promise<ExitedEvent> {
    await this.until(`exit of ${uid}`, () => this.exited.has(uid));
    const { started, exited } = this.times.get(uid) ?? {};
    if (typeof exited !== 'number' || exited > Date.now() + 1) {
      throw new Error(`exit of ${uid} has no plausible time: ${String(exited)}`);
    }
    if (started !== undefined && exited < started) {
      throw new Error(`exit of ${uid} at ${exited} is before its start at ${started}`);
    }
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
export function recordingLogger(lines: string[]): Logger {
  const log: Logger = {
    error: (m) => lines.push(`error ${m}`),
    warn: (m) => lines.push(`warn ${m}`),
    info: (m) => lines.push(`info ${m}`),
    debug: () => undefined,
    child: () => log,
  };
  return log;
}

/** A spawn of `executable` as task `uid`, in a fresh sandbox `dir/uid` (its cwd and files). */
export function sandboxSpec(
  dir: string,
  uid: string,
  executable: string,
  args: string[] = [],
  env: Record<string, string> = {},
): FileSpawnSpec {
  const sandbox = path.join(dir, uid);
  fs.mkdirSync(sandbox);
  const stdoutPath = path.join(sandbox, 'stdout');
  const stderrPath = path.join(sandbox, 'stderr');
  return { uid, executable, args, env, cwd: sandbox, stdoutPath, stderrPath };
}

/**
 * For a test file: a temp dir made before its tests and removed after them, and `spec()`, a
 * sandboxSpec with a fresh uid in it. `dir()` names the dir (once the tests run).
 */
export function tempSandboxes(prefix: string): {
  dir: () => string;
  spec: (executable: string, args?: string[], env?: Record<string, string>) => FileSpawnSpec;
} {
  let dir = '';
  let n = 0;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  return {
    dir: () => dir,
    spec: (executable, args = [], env = {}) =>
      sandboxSpec(dir, `task.${++n}`, executable, args, env),
  };
}

export function errnoOf(fn: () => void): string | undefined {
  try {
    fn();
    return undefined;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code;
  }
}

/** Fields 4..6 of /proc/<pid>/stat: parent, process group and session of a live process. */
export function procIds(pid: number): { ppid: number; pgrp: number; sid: number } {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(f[1]), pgrp: Number(f[2]), sid: Number(f[3]) };
}

/** An event as read off the wire: a protocol event, loose so tests can look at any field. */
export type HelperEvent = { ev: ProtocolEvent['ev']; uid?: string } & Record<string, unknown>;

/**
 * One helper run directly, spoken to in its line protocol: a test writes raw lines (well formed
 * or not) and awaits events.
 */
export class RawHelper {
  readonly events: HelperEvent[] = [];
  /** The events read in each chunk: a write of the helper's (up to PIPE_BUF) is one of them. */
  readonly chunks: HelperEvent[][] = [];
  readonly exit: Promise<{ code: number | null; signal: string | null }>;
  private text = '';
  private waiters: { check: () => boolean; resolve: () => void }[] = [];

  private constructor(readonly proc: ChildProcessByStdio<Writable, Readable, null>) {
    proc.stdout.setEncoding('utf8');
    proc.stdout.on('data', (c: string) => {
      this.text += c;
      const lines = this.text.split('\n');
      this.text = lines.pop() ?? '';
      const chunk = lines.map((l) => JSON.parse(l) as HelperEvent);
      this.events.push(...chunk);
      if (chunk.length > 0) this.chunks.push(chunk);
      this.waiters = this.waiters.filter((w) => {
        if (!w.check()) return true;
        w.resolve();
        return false;
      });
    });
    this.exit = new Promise((resolve) =>
      proc.once('exit', (code, signal) => resolve({ code, signal })),
    );
  }

  /** Starts a helper, given `more` arguments (e.g. --stream PATH), and awaits its ready event. */
  static async start(helper: SpawnerHelper, more: string[] = []): Promise<RawHelper> {
    const { file, args } = spawnerCommand(helper);
    const h = new RawHelper(
      spawn(file, [...args, ...more], { stdio: ['pipe', 'pipe', 'inherit'] }),
    );
    await h.next('ready', (e) => e.ev === 'ready');
    return h;
  }

  write(text: string | Buffer): void {
    this.proc.stdin.write(text);
  }

  /** Sends requests, one JSON line each (a test may send ill-formed ones on purpose). */
  send(...requests: (HelperRequest | object)[]): void {
    this.write(requests.map((r) => JSON.stringify(r) + '\n').join(''));
  }

  /** The first event (already received or to come) that matches. */
  async next(what: string, match: (e: HelperEvent) => boolean): Promise<HelperEvent> {
    const found = (): HelperEvent | undefined => this.events.find(match);
    if (found() === undefined) {
      const d = deferred<void>();
      this.waiters.push({ check: () => found() !== undefined, resolve: () => d.resolve() });
      await withTimeout(d.promise, WAIT_MS, what);
    }
    return found()!;
  }

  /** The event about `uid` of kind `ev`. */
  of(ev: string, uid: string): Promise<HelperEvent> {
    return this.next(`${ev} of ${uid}`, (e) => e.ev === ev && e.uid === uid);
  }

  /** Ends stdin and resolves with the exit status. */
  async end(): Promise<{ code: number | null; signal: string | null }> {
    this.proc.stdin.end();
    return withTimeout(this.exit, WAIT_MS, 'helper exit');
  }

  /** Stops the helper whatever state it is in (a test that failed early): stdin end, else kill. */
  async close(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    this.proc.stdin.end();
    try {
      await withTimeout(this.exit, WAIT_MS, 'helper exit');
    } catch {
      this.proc.kill('SIGKILL');
      await this.exit;
    }
  }
}
