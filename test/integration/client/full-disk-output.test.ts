/**
 * A full disk fails no task that succeeded: a session (store, pilot sandbox, stream files) on a
 * real 2 MB tmpfs, filled while 200 tasks that print nothing run and exit 0. Their end frames
 * cannot be written (output lost), which is a warning on each (task.outputLost), never a
 * failure, and never a retry (a side-effecting task would run twice).
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PilotManager } from '../../../src/client/pilot-manager';
import { Session } from '../../../src/client/session';
import { TaskManager } from '../../../src/client/task-manager';
import { deferred, withTimeout } from '../../../src/lib/deferred';
import { streamDirOf } from '../../../src/lib/stream-cursor';
import { closedGate, type FlockGate } from '../../support/flock-gate';
import { padStreamFile } from '../../support/stream-page';
import { Tmpfs, tmpfsUnavailable } from '../../support/tmpfs';

const TASKS = 200;
const d = tmpfsUnavailable === undefined ? describe : describe.skip;

/** Resolves once `dir` holds `n` entries (each task's mark, made outside the full disk). */
async function entries(dir: string, n: number, ms: number): Promise<void> {
  const done = deferred<void>();
  const look = () => void (fs.readdirSync(dir).length >= n && done.resolve());
  const watcher = fs.watch(dir, look);
  try {
    look();
    await withTimeout(done.promise, ms, `${n} tasks ended while the disk was full`);
  } finally {
    watcher.close();
  }
}

/** Resolves once the session's store writes again (it cannot while the disk is full). */
async function storeWritable(session: Session): Promise<void> {
  const back = deferred<void>();
  session.onStoreError((c) => void (c === undefined && back.resolve()));
  if (session.storeError === undefined) return;
  await withTimeout(back.promise, 60_000, 'the store writable');
}

d(`a full disk under a session (${tmpfsUnavailable ?? 'a real 2 MB tmpfs'})`, () => {
  const undo: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const u of undo.splice(0).reverse()) await u();
  });

  it('fails none of 200 tasks that exited 0 and printed nothing while it was full, and runs each once', async () => {
    const fsys = Tmpfs.mount('2m');
    undo.push(() => fsys.unmount());
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-full-out-'));
    undo.push(() => fs.rmSync(outside, { recursive: true, force: true }));
    const marks = path.join(outside, 'marks');
    fs.mkdirSync(marks);
    const session = await Session.open({ dir: fsys.dir });
    undo.push(() => session.close().catch(() => undefined));
    const pmgr = new PilotManager(session, { shutdownGraceMs: 5_000 });
    const tmgr = new TaskManager(session);
    const [pilot] = await pmgr.submitPilots([{ resource: 'local', cores: 2, runtimeMin: 5 }]);
    tmgr.addPilots([pilot!]);
    await pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 30_000 });
    const gateFile = path.join(outside, 'gate');
    const gate: FlockGate = await closedGate(gateFile);
    undo.push(() => gate.remove());
    // each leaves a mark outside the full disk (a side effect: the count of its runs)
    const tasks = await tmgr.submitTasks(
      Array.from({ length: TASKS }, () => ({
        executable: '/bin/sh',
        arguments: ['-c', 'flock -s "$0" true; echo >>"$1/$PF_TASK_ID"', gateFile, marks],
        retries: 2,
      })),
    );
    // the first run, held by the gate; the rest reach the agent as room is made, disk full or not
    await tmgr.waitTasks({ uids: [tasks[0]!.uid], states: ['AGENT_EXECUTING'], timeoutMs: 30_000 });
    const streams = streamDirOf(pilot!.sandbox);
    for (const f of fs.readdirSync(streams)) padStreamFile(path.join(streams, f));
    fsys.fill();
    await gate.open();
    // every task runs and ends while the disk stays full
    await entries(marks, TASKS, 90_000);
    fsys.free();
    await storeWritable(session);
    await tmgr.waitTasks({ timeoutMs: 60_000 });
    const failed = tasks.filter((t) => t.state !== 'DONE');
    expect(failed.map((t) => [t.uid, t.state, t.reason?.code])).toEqual([]);
    expect(tasks.every((t) => t.exitCode === 0 && t.attempt === 1)).toBe(true);
    // what the full disk cost is said on the tasks it cost
    const warned = tasks.filter((t) => t.outputLost !== undefined);
    expect(warned.length).toBeGreaterThan(0);
    expect(warned[0]!.outputLost).toContain('no space left on device (ENOSPC)');
    // each ran once: one mark, one line
    for (const t of tasks) {
      expect(fs.readFileSync(path.join(marks, t.uid), 'utf8')).toBe('\n');
    }
  }, 180_000);
});
