import { describe, expect, it } from '@jest/globals';
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { OutputUnavailableError } from '../../../src/errors';
import { tailOutput } from '../../../src/client/task-output';
import { withTimeout } from '../../../src/lib/deferred';
import { STREAM_MAGIC, encodeFrame, type FrameKind } from '../../../src/lib/output-frames';
import { fixtures } from '../../support/session-fixture';
import { collect, followGatedPrinter } from '../../support/tail-check';
import { tempDirs } from '../../support/temp-dirs';

/** Handles of this process, by kind: a follower holds one FSEventWrap (its fs.watch). */
function handles(): Record<string, number> {
  const n: Record<string, number> = {};
  for (const r of process.getActiveResourcesInfo()) n[r] = (n[r] ?? 0) + 1;
  return n;
}

describe('tmgr.tail on a local pilot', () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-tail-');

  it('follows a running task: the first line before it ends, then the rest, then ends', async () => {
    const fx = await fixture.open();
    const uid = await followGatedPrinter(fx.tmgr, temp.make());
    // a late follower gets everything printed before, with or without follow
    expect(await collect(fx.tmgr.tail(uid))).toEqual(['first', 'second', 'third', 'partial']);
    const late = collect(fx.tmgr.tail(uid, { follow: true }));
    expect(await withTimeout(late, 10_000, 'late follower')).toEqual([
      'first',
      'second',
      'third',
      'partial',
    ]);
    expect(await collect(fx.tmgr.tail(uid, { stream: 'stderr' }))).toEqual(['oops']);
  }, 120_000);

  it('a follower that leaves early releases its watchers', async () => {
    const fx = await fixture.open();
    const [t] = await fx.tmgr.submitTasks([
      { executable: '/bin/sh', arguments: ['-c', 'echo one; exec sleep 60'] },
    ]);
    const before = handles();
    for await (const line of fx.tmgr.tail(t!.uid, { follow: true })) {
      expect(line).toBe('one');
      expect(handles().FSEventWrap ?? 0).toBe((before.FSEventWrap ?? 0) + 1);
      break;
    }
    expect(handles().FSEventWrap ?? 0).toBe(before.FSEventWrap ?? 0);
    await fx.tmgr.cancelTasks([t!.uid]);
  }, 60_000);

  it('a task that has not started yet: followed from before its output file exists', async () => {
    const fx = await fixture.open({ cores: 1 });
    const [blocker, t] = await fx.tmgr.submitTasks([
      { executable: '/bin/sleep', arguments: ['60'] },
      { executable: '/bin/echo', arguments: ['late start'] },
    ]);
    const lines = collect(fx.tmgr.tail(t!.uid, { follow: true }));
    await fx.tmgr.cancelTasks([blocker!.uid]);
    expect(await withTimeout(lines, 60_000, 'follower')).toEqual(['late start']);
  }, 90_000);

  it('refuses a function task and an unknown uid', async () => {
    const fx = await fixture.open();
    const [f] = await fx.tmgr.submitTasks([
      { mode: 'function', function: { module: 'node:os', export: 'hostname' } },
    ]);
    expect(() => fx.tmgr.tail(f!.uid)).toThrow(OutputUnavailableError);
    expect(() => fx.tmgr.tail('no-such-task')).toThrow(/no-such-task/);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
  }, 60_000);

  it("a task with output stream: its lines from its pilot's stream files", async () => {
    const fx = await fixture.open();
    const [t] = await fx.tmgr.submitTasks([{ executable: '/bin/true' }]);
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    // what the agent and a spawner helper will do for output 'stream' (issue 17), by hand
    t!.output = 'stream';
    const dir = path.join(fx.pilot.sandbox, 'output');
    mkdirSync(dir, { recursive: true });
    const frame = (kind: FrameKind, data?: string): Buffer =>
      encodeFrame(kind, t!.uid, t!.attempt, data === undefined ? undefined : Buffer.from(data));
    writeFileSync(
      path.join(dir, 'spawner-0.pfout'),
      Buffer.concat([STREAM_MAGIC, frame('stdout', 'streamed\nlast'), frame('stderr', 'e\n')]),
    );
    expect(await collect(fx.tmgr.tail(t!.uid))).toEqual(['streamed', 'last']);
    // final, no end frame: a follower reads what there is and ends
    const follow = collect(fx.tmgr.tail(t!.uid, { follow: true, stream: 'stderr' }));
    expect(await withTimeout(follow, 10_000, 'follower')).toEqual(['e']);
  }, 90_000);

  it('a sandbox the client cannot see: an error naming the path', async () => {
    const root = temp.make();
    mkdirSync(path.join(root, 'here'));
    const missing = path.join(root, 'elsewhere', 'task.000001');
    const src = { uid: 'task.000001', now: () => ({ sandbox: missing, final: false }) };
    const it1 = tailOutput({ ...src, watch: () => () => undefined }, { follow: true });
    await expect(it1.next()).rejects.toThrow(
      new OutputUnavailableError(
        `cannot read the output of task task.000001: its sandbox ${missing} is not on this ` +
          'machine (its pilot runs on nodes that share no file system with this one: read it there; ' +
          'or the sandbox was removed since)',
      ),
    );
  });
});
