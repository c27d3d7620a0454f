import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ExecutorCore } from '../../src/components/executor/core';
import type { LaunchOptions } from '../../src/components/executor/launch';
import { ExecutorShell } from '../../src/components/executor/shell';
import type { SpawnerPool } from '../../src/components/executor/process/spawner-pool';
import type { Notification, TaskDescription, TaskRecord } from '../../src/generated';
import { systemClock } from '../../src/lib/clock';
import { deferred, withTimeout } from '../../src/lib/deferred';
import { silentLogger } from '../../src/lib/logger';

export type Slot = NonNullable<TaskRecord['slots']>[number];

/** How long the executor integration tests wait for one event. */
export const WAIT_MS = 8_000;

/** Task numbers, unique in a test file (each file gets its own module instance). */
let taskNo = 0;

/** Final executor states: the task left the Executor. */
const LEFT = new Set(['AGENT_STAGING_OUTPUT_PENDING', 'FAILED', 'CANCELED']);

export interface HarnessOptions {
  /** Prefix of task uids (`<prefix>.<n>`), unique per test file. */
  prefix: string;
  launch: Partial<LaunchOptions>;
  /** Extra environment of the spawner helpers (hence of every task), e.g. a batch job's. */
  env?: Record<string, string>;
}

/** ExecutorShell (its core over a real SpawnerPool, which runs the built helper from dist/). */
export class ExecutorHarness {
  readonly notes: Notification[] = [];
  private waiters: { check: () => boolean; resolve: () => void }[] = [];

  pool!: SpawnerPool;
  core!: ExecutorCore;

  private constructor(
    readonly dir: string,
    private readonly prefix: string,
  ) {}

  static async start(dir: string, opts: HarnessOptions): Promise<ExecutorHarness> {
    const h = new ExecutorHarness(dir, opts.prefix);
    const shell = await ExecutorShell.start({
      spawners: 1,
      logger: silentLogger,
      clock: systemClock,
      killGraceMs: 5_000,
      launch: opts.launch,
      notify: (ns) => h.noted(ns),
      forward: () => undefined,
      release: () => undefined,
      ...(opts.env === undefined ? {} : { spawnerEnv: opts.env }),
    });
    h.pool = shell.pool;
    h.core = shell.core;
    return h;
  }

  /** A task in AGENT_EXECUTING_PENDING with a fresh sandbox and the given slots. */
  task(desc: TaskDescription, slots: Slot[]): TaskRecord {
    const uid = `${this.prefix}.${++taskNo}`;
    const sandbox = path.join(this.dir, uid);
    fs.mkdirSync(sandbox);
    return {
      uid,
      attempt: 1,
      state: 'AGENT_EXECUTING_PENDING',
      session: 'sess.it',
      pilot: 'pilot.it',
      sandbox,
      slots,
      description: desc,
    };
  }

  /** Resolves once the task has left the Executor, with its stdout. */
  async done(t: TaskRecord): Promise<string> {
    await this.until(`${t.uid} done`, () => LEFT.has(t.state));
    return fs.readFileSync(`${t.sandbox!}/stdout`, 'utf8');
  }

  until(what: string, check: () => boolean, ms = WAIT_MS): Promise<void> {
    if (check()) return Promise.resolve();
    const d = deferred<void>();
    this.waiters.push({ check, resolve: () => d.resolve() });
    return withTimeout(d.promise, ms, what);
  }

  private noted(ns: Notification[]): void {
    this.notes.push(...ns);
    this.waiters = this.waiters.filter((w) => {
      if (!w.check()) return true;
      w.resolve();
      return false;
    });
  }
}

/** stdout lines, sorted (ranks print in any order). */
export function lines(out: string): string[] {
  return out.split('\n').filter(Boolean).sort();
}
