/**
 * Shared by the keep mode tests (spawner-keep.test.ts): a master speaking the helper protocol
 * over a helper's keep socket, a master process (fixtures/keep-master.js) to SIGKILL, and a wait
 * for a file to appear.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { existsSync, watch, type FSWatcher } from 'node:fs';
import type { Socket } from 'node:net';
import * as path from 'node:path';
import type { Readable } from 'node:stream';
import type { FileSpawnSpec } from '../../../../../src/components/executor/effects';
import { connectKeep } from '../../../../../src/components/executor/process/helper-conn';
import type { SpawnerHelper } from '../../../../../src/components/executor/process/spawner-pool';
import { deferred, withTimeout } from '../../../../../src/lib/deferred';
import { WAIT_MS, type HelperEvent } from './spawner-fixtures';

/** A master attached through a helper's keep socket: raw lines out, events in. */
export class SocketMaster {
  readonly events: HelperEvent[] = [];
  readonly closed: Promise<void>;
  private text = '';
  private waiters: { check: () => boolean; resolve: () => void }[] = [];

  private constructor(readonly socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => {
      const lines = (this.text + c).split('\n');
      this.text = lines.pop() ?? '';
      this.events.push(...lines.map((l) => JSON.parse(l) as HelperEvent));
      this.waiters = this.waiters.filter((w) => {
        if (!w.check()) return true;
        w.resolve();
        return false;
      });
    });
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
  }

  /** Connects (trying again until the helper listens) and awaits the ready event. */
  static async connect(file: string): Promise<SocketMaster> {
    const m = new SocketMaster(await connectKeep(file, WAIT_MS));
    await m.next('ready', (e) => e.ev === 'ready');
    return m;
  }

  send(...requests: object[]): void {
    this.socket.write(requests.map((r) => JSON.stringify(r) + '\n').join(''));
  }

  async next(what: string, match: (e: HelperEvent) => boolean): Promise<HelperEvent> {
    const found = (): HelperEvent | undefined => this.events.find(match);
    if (found() === undefined) {
      const d = deferred<void>();
      this.waiters.push({ check: () => found() !== undefined, resolve: () => d.resolve() });
      await withTimeout(d.promise, WAIT_MS, what);
    }
    return found()!;
  }

  of(ev: string, uid: string): Promise<HelperEvent> {
    return this.next(`${ev} of ${uid}`, (e) => e.ev === ev && e.uid === uid);
  }
}

const MASTER = path.join(__dirname, 'fixtures', 'keep-master.js');

/** A keep-master.js process: the lines it printed, as they come. */
export class MasterProcess {
  readonly lines: Record<string, unknown>[] = [];
  readonly exit: Promise<void>;
  private text = '';
  private waiters: { check: () => boolean; resolve: () => void }[] = [];

  private constructor(readonly proc: ChildProcessByStdio<null, Readable, null>) {
    proc.stdout.setEncoding('utf8');
    proc.stdout.on('data', (c: string) => {
      const lines = (this.text + c).split('\n');
      this.text = lines.pop() ?? '';
      this.lines.push(...lines.map((l) => JSON.parse(l) as Record<string, unknown>));
      this.waiters = this.waiters.filter((w) => {
        if (!w.check()) return true;
        w.resolve();
        return false;
      });
    });
    this.exit = new Promise((resolve) => proc.once('exit', () => resolve()));
  }

  /** Starts one, whose pool of one `helper` keeps {dir, ms} and spawns `specs`. */
  static start(
    helper: SpawnerHelper,
    dir: string,
    ms: number,
    specs: FileSpawnSpec[],
  ): MasterProcess {
    const args = [MASTER, helper, dir, String(ms), JSON.stringify(specs)];
    return new MasterProcess(
      spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] }),
    );
  }

  /** The first line that matches, once it has come. */
  async line(
    what: string,
    match: (l: Record<string, unknown>) => boolean,
  ): Promise<Record<string, unknown>> {
    const found = (): Record<string, unknown> | undefined => this.lines.find(match);
    if (found() === undefined) {
      const d = deferred<void>();
      this.waiters.push({ check: () => found() !== undefined, resolve: () => d.resolve() });
      await withTimeout(d.promise, WAIT_MS, `${what} from keep-master.js`);
    }
    return found()!;
  }

  /** Its helper's pid, once its pool is ready. */
  async helper(): Promise<number> {
    return (await this.line('ready', (l) => 'helper' in l)).helper as number;
  }

  /** The pid of task `uid`, once the master got its start. */
  async started(uid: string): Promise<number> {
    return (await this.line(`start of ${uid}`, (l) => l.started === uid)).pid as number;
  }

  /** SIGKILLs it and awaits its end. */
  async kill(): Promise<void> {
    this.proc.kill('SIGKILL');
    await withTimeout(this.exit, WAIT_MS, 'keep-master.js exit');
  }
}

/** Resolves once `file` exists (watching its directory), or rejects after `ms`. */
export function appears(file: string, ms = WAIT_MS): Promise<void> {
  let watcher: FSWatcher | undefined;
  const seen = new Promise<void>((resolve) => {
    watcher = watch(path.dirname(file), () => {
      if (existsSync(file)) resolve();
    });
    if (existsSync(file)) resolve();
  });
  return withTimeout(seen, ms, `${file} to appear`).finally(() => watcher?.close());
}
