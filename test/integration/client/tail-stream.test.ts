import { describe, expect, it } from '@jest/globals';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { OutputUnavailableError } from '../../../src/errors';
import { tailOutput, type OutputSource, type TaskView } from '../../../src/client/tasks/output';
import { withTimeout } from '../../../src/lib/deferred';
import { STREAM_MAGIC, encodeFrame, type FrameKind } from '../../../src/lib/output-frames';
import { collect } from '../../support/tail-check';
import { tempDirs } from '../../support/temp-dirs';

const UID = 'task.000007';
const f = (kind: FrameKind, data?: string, attempt = 1, uid = UID): Buffer =>
  encodeFrame(kind, uid, attempt, data === undefined ? undefined : Buffer.from(data));

/** A task whose view the test changes, as its states would: `set` wakes its followers. */
function taskSource(view: TaskView): OutputSource & { set(v: Partial<TaskView>): void } {
  const wakes = new Set<() => void>();
  return {
    uid: UID,
    now: () => ({ ...view }),
    watch: (wake) => {
      wakes.add(wake);
      return () => wakes.delete(wake);
    },
    set: (v) => {
      Object.assign(view, v);
      for (const w of wakes) w();
    },
  };
}

/** A running task's view whose output streams into `pilot`'s stream files (attempt 1). */
const streaming = (pilot: string): TaskView => ({
  sandbox: undefined,
  final: false,
  output: 'stream',
  pilotSandbox: pilot,
  attempt: 1,
});

/** The next line of a follower, within a generous time (it comes on a file event). */
async function next(lines: AsyncGenerator<string, void, undefined>, what: string): Promise<string> {
  const r = await withTimeout(lines.next(), 20_000, what);
  if (r.done === true) throw new Error(`the follower ended before ${what}`);
  return r.value;
}

describe('tailOutput of a task with output stream', () => {
  const temp = tempDirs('pf-tail-stream-');

  it('follows frames as a spawner appends them, among other tasks, until the task ends', async () => {
    const pilot = temp.make();
    const dir = path.join(pilot, 'output');
    mkdirSync(dir);
    const file = path.join(dir, 'spawner-0.pfout');
    writeFileSync(
      file,
      Buffer.concat([STREAM_MAGIC, f('stdout', 'noise\n', 1, 'task.000001'), f('stdout', 'fi')]),
    );
    const src = taskSource(streaming(pilot));
    const lines = tailOutput(src, { follow: true });
    appendFileSync(file, f('stdout', 'rst\n'));
    expect(await next(lines, 'the first line')).toBe('first');
    // a frame written in two appends, as a writer mid-append leaves it for a moment
    const frame = f('stdout', 'second\nthird\npart');
    appendFileSync(file, frame.subarray(0, 10));
    const second = next(lines, 'the second line');
    appendFileSync(file, Buffer.concat([frame.subarray(10), f('stderr', 'oops\n')]));
    expect(await second).toBe('second');
    expect(await next(lines, 'the third line')).toBe('third');
    appendFileSync(
      file,
      Buffer.concat([f('stdout', 'ial'), f('end'), f('stdout', 'x\n', 1, 'task.000002')]),
    );
    // after its end frame nothing more is read for it, and the follower ends with the task
    const rest = collect(lines);
    src.set({ final: true });
    expect(await rest).toEqual(['partial']);
  }, 60_000);

  it('waits for a stream directory and a file that do not exist yet', async () => {
    const pilot = temp.make();
    const src = taskSource(streaming(pilot));
    const lines = tailOutput(src, { follow: true, stream: 'stderr' });
    const first = next(lines, 'a line in a file made later');
    mkdirSync(path.join(pilot, 'output'));
    writeFileSync(
      path.join(pilot, 'output', 'spawner-1.pfout'),
      Buffer.concat([STREAM_MAGIC, f('stdout', 'out\n'), f('stderr', 'err\n')]),
    );
    expect(await first).toBe('err');
    // the task ended without an end frame (its helper was killed): what is there, then done
    appendFileSync(path.join(pilot, 'output', 'spawner-1.pfout'), f('stderr', 'last'));
    src.set({ final: true });
    expect(await collect(lines)).toEqual(['last']);
  }, 60_000);

  it('a new attempt starts over, in whichever file its frames are', async () => {
    const pilot = temp.make();
    const dir = path.join(pilot, 'output');
    mkdirSync(dir);
    writeFileSync(
      path.join(dir, 'a.pfout'),
      Buffer.concat([STREAM_MAGIC, f('stdout', 'one\ncut')]),
    );
    const src = taskSource(streaming(pilot));
    const lines = tailOutput(src, { follow: true });
    expect(await next(lines, 'the first attempt')).toBe('one');
    // its pilot was lost (no end frame): attempt 2 runs and streams into another file
    writeFileSync(
      path.join(dir, 'b.pfout'),
      Buffer.concat([
        STREAM_MAGIC,
        f('stdout', 'stale\n'),
        f('stdout', 'two\n', 2),
        f('end', undefined, 2),
      ]),
    );
    src.set({ attempt: 2 });
    expect(await next(lines, "the first attempt's partial line")).toBe('cut');
    expect(await next(lines, 'the second attempt')).toBe('two');
    const rest = collect(lines);
    src.set({ final: true });
    expect(await rest).toEqual([]);
  }, 60_000);

  it('without follow: what is there now; a pilot sandbox not on this machine is an error', async () => {
    const pilot = temp.make();
    mkdirSync(path.join(pilot, 'output'));
    writeFileSync(
      path.join(pilot, 'output', 'a.pfout'),
      Buffer.concat([STREAM_MAGIC, f('stdout', 'a\nb\nc')]),
    );
    const view = streaming(pilot);
    expect(await collect(tailOutput(taskSource(view)))).toEqual(['a', 'b', 'c']);
    const missing = path.join(pilot, 'elsewhere');
    const away = tailOutput(taskSource({ ...view, pilotSandbox: missing }), { follow: true });
    await expect(away.next()).rejects.toThrow(
      new OutputUnavailableError(
        `cannot read the output of task ${UID}: its pilot's sandbox ${missing} is not on this ` +
          "machine, and its pilot's agent cannot read it for this client (its pilot ended, or the " +
          'sandbox was removed since)',
      ),
    );
  });
});
