import { describe, expect, it } from '@jest/globals';
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { OutputUnavailableError } from '../../../src/errors';
import type { TaskDescription } from '../../../src/generated';
import { tailOutput } from '../../../src/client/tasks/output';
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

/** Each test runs once per output mode: the default ('stream') and 'files'. */
const MODES: [string, Partial<TaskDescription>][] = [
  ["output 'stream' (the default)", {}],
  ["output 'files'", { output: 'files' }],
];

describe('tmgr.tail on a local pilot', () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-tail-');

  it.each(MODES)(
    '%s: follows a running task: the first line before it ends, then the rest, then ends',
    async (_mode, extra) => {
      const fx = await fixture.open();
      const uid = await followGatedPrinter(fx.tmgr, temp.make(), extra);
      expect(fx.tmgr.get(uid)!.output).toBe(extra.output ?? 'stream');
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
    },
    120_000,
  );

  it.each(MODES)(
    '%s: a follower that leaves early releases its watchers',
    async (_mode, extra) => {
      const fx = await fixture.open();
      const [t] = await fx.tmgr.submitTasks([
        { executable: '/bin/sh', arguments: ['-c', 'echo one; exec sleep 60'], ...extra },
      ]);
      const before = handles();
      for await (const line of fx.tmgr.tail(t!.uid, { follow: true })) {
        expect(line).toBe('one');
        expect(handles().FSEventWrap ?? 0).toBe((before.FSEventWrap ?? 0) + 1);
        break;
      }
      expect(handles().FSEventWrap ?? 0).toBe(before.FSEventWrap ?? 0);
      await fx.tmgr.cancelTasks([t!.uid]);
    },
    60_000,
  );

  it.each(MODES)(
    '%s: a task that has not started yet: followed from before its output exists',
    async (_mode, extra) => {
      const fx = await fixture.open({ cores: 1 });
      const [blocker, t] = await fx.tmgr.submitTasks([
        { executable: '/bin/sleep', arguments: ['60'] },
        { executable: '/bin/echo', arguments: ['late start'], ...extra },
      ]);
      const lines = collect(fx.tmgr.tail(t!.uid, { follow: true }));
      await fx.tmgr.cancelTasks([blocker!.uid]);
      expect(await withTimeout(lines, 60_000, 'follower')).toEqual(['late start']);
    },
    90_000,
  );

  it('gives no line of a function call that printed nothing, and refuses an unknown uid', async () => {
    const fx = await fixture.open();
    const [f] = await fx.tmgr.submitTasks([
      { mode: 'function', function: { module: 'node:os', export: 'hostname' } },
    ]);
    expect(() => fx.tmgr.tail('no-such-task')).toThrow(/no-such-task/);
    // followed from before it ran to its end (what calls print: function-output.test.ts)
    const lines = collect(fx.tmgr.tail(f!.uid, { follow: true }));
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect(await withTimeout(lines, 30_000, 'follower')).toEqual([]);
    expect(await collect(fx.tmgr.tail(f!.uid))).toEqual([]);
  }, 60_000);

  it("a streamed task's frames without an end frame (a helper that died): what is there, then the end", async () => {
    const fx = await fixture.open();
    // output 'files': no helper frames it; its frames are written by hand, with no end frame
    const [t] = await fx.tmgr.submitTasks([{ executable: '/bin/true', output: 'files' }]);
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
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
    const src = {
      uid: 'task.000001',
      now: () => ({ sandbox: missing, final: false, output: 'files' as const }),
    };
    const it1 = tailOutput({ ...src, watch: () => () => undefined }, { follow: true });
    await expect(it1.next()).rejects.toThrow(
      new OutputUnavailableError(
        `cannot read the output of task task.000001: its sandbox ${missing} is not on this ` +
          "machine, and its pilot's agent cannot read it for this client (its pilot ended, or the " +
          'sandbox was removed since)',
      ),
    );
  });

  it('a task whose output is not known yet: nothing is read, not even a stdout file in its sandbox', async () => {
    const sandbox = temp.make();
    writeFileSync(path.join(sandbox, 'stdout'), 'not its own\n');
    const view = { sandbox, final: false, pilotSandbox: sandbox };
    let wake = (): void => undefined;
    const src = {
      uid: 'task.000001',
      now: () => ({ ...view }), // as it is at each look
      watch: (w: () => void) => {
        wake = w;
        return () => undefined;
      },
    };
    const lines = collect(tailOutput(src, { follow: true }));
    // its agent tells the mode and it ends: with 'stream' and no frames, nothing
    Object.assign(view, { output: 'stream', final: true });
    wake();
    expect(await withTimeout(lines, 10_000, 'follower')).toEqual([]);
    expect(
      await collect(tailOutput({ ...src, now: () => ({ ...view, output: 'files' }) })),
    ).toEqual(['not its own']);
  });
});
