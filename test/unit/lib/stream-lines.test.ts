import { describe, expect, it } from '@jest/globals';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { STREAM_MAGIC, encodeFrame, type FrameKind } from '../../../src/lib/output-frames';
import { STREAM_CHUNK } from '../../../src/lib/stream-cursor';
import { StreamLines } from '../../../src/lib/stream-lines';
import { tempDirs } from '../../support/temp-dirs';

const f = (kind: FrameKind, uid: string, data?: string | Buffer, attempt = 1): Buffer =>
  encodeFrame(kind, uid, attempt, typeof data === 'string' ? Buffer.from(data) : data);

/** A stream file's bytes: the header, then the frames. */
const file = (...frames: Buffer[]): Buffer => Buffer.concat([STREAM_MAGIC, ...frames]);

/** Every line read now, as a follower reads: read() while more(), then nothing left. */
async function drain(lines: StreamLines): Promise<string[]> {
  const got: string[] = [];
  do got.push(...(await lines.read()));
  while (await lines.more());
  return got;
}

describe('StreamLines', () => {
  const temp = tempDirs('pf-stream-lines-');

  it("reads one task attempt's stream among other tasks', attempts' and streams' frames", async () => {
    const dir = temp.make();
    writeFileSync(
      path.join(dir, 'a.pfout'),
      file(
        f('stdout', 'task.000001', 'one\ntw'),
        f('stdout', 'task.000002', 'other\n'),
        f('stderr', 'task.000001', 'oops\n'),
        f('stdout', 'task.000001', 'again\n', 2), // a later attempt of the same task
        f('stdout', 'task.000001', 'o\nthree\n'),
        f('end', 'task.000002'),
      ),
    );
    const out = new StreamLines(dir, 'task.000001', 1, 'stdout');
    expect(await drain(out)).toEqual(['one', 'two', 'three']);
    expect([out.complete, out.file]).toEqual([false, path.join(dir, 'a.pfout')]);
    const err = new StreamLines(dir, 'task.000001', 1, 'stderr');
    expect(await drain(err)).toEqual(['oops']);
    const second = new StreamLines(dir, 'task.000001', 2, 'stdout');
    expect(await drain(second)).toEqual(['again']);
    await Promise.all([out.close(), err.close(), second.close()]);
  });

  it('a frame cut at the end of the file (a writer mid-append) is read once it is whole', async () => {
    const dir = temp.make();
    const name = path.join(dir, 'a.pfout');
    const frame = f('stdout', 'task.000001', 'whole line\n');
    writeFileSync(name, file(f('stdout', 'task.000001', 'first\n')));
    const lines = new StreamLines(dir, 'task.000001', 1, 'stdout');
    expect(await drain(lines)).toEqual(['first']);
    for (const cut of [3, 9, frame.length - 1]) {
      appendFileSync(name, frame.subarray(0, cut));
      expect(await drain(lines)).toEqual([]);
      appendFileSync(name, frame.subarray(cut));
      expect(await drain(lines)).toEqual(['whole line']);
    }
    // a header cut short too: the file is read once it has one
    const late = path.join(dir, 'b.pfout');
    writeFileSync(late, STREAM_MAGIC.subarray(0, 3));
    const other = new StreamLines(dir, 'task.000002', 1, 'stdout');
    expect(await drain(other)).toEqual([]);
    appendFileSync(
      late,
      Buffer.concat([STREAM_MAGIC.subarray(3), f('stdout', 'task.000002', 'x\n')]),
    );
    expect(await drain(other)).toEqual(['x']);
    await Promise.all([lines.close(), other.close()]);
  });

  it('keeps a character whole when its UTF-8 bytes are split across frames', async () => {
    const dir = temp.make();
    const text = Buffer.from('prix: 5 €, naïve 🐟\n');
    const euro = text.indexOf(Buffer.from('€'));
    const fish = text.indexOf(Buffer.from('🐟'));
    writeFileSync(
      path.join(dir, 'a.pfout'),
      file(
        f('stdout', 'task.000001', text.subarray(0, euro + 1)),
        f('stdout', 'task.000002', Buffer.from([0xe2, 0x82])), // another task's half character
        f('stdout', 'task.000001', text.subarray(euro + 1, fish + 2)),
        f('stdout', 'task.000001', text.subarray(fish + 2)),
      ),
    );
    const lines = new StreamLines(dir, 'task.000001', 1, 'stdout');
    expect(await drain(lines)).toEqual(['prix: 5 €, naïve 🐟']);
    await lines.close();
  });

  it('its end frame completes it: the partial last line comes from rest(), later frames are not read', async () => {
    const dir = temp.make();
    const name = path.join(dir, 'a.pfout');
    writeFileSync(name, file(f('stdout', 'task.000001', 'line\npartial')));
    const lines = new StreamLines(dir, 'task.000001', 1, 'stdout');
    expect(await drain(lines)).toEqual(['line']);
    expect(lines.complete).toBe(false);
    appendFileSync(
      name,
      Buffer.concat([f('end', 'task.000001'), f('stdout', 'task.000002', 'x\n')]),
    );
    expect(await lines.read()).toEqual([]);
    expect(lines.complete).toBe(true);
    expect(await lines.more()).toBe(false);
    expect(lines.rest()).toBe('partial');
    expect(lines.rest()).toBeUndefined();
    await lines.close();
  });

  it('finds its task in a file that appears later, in a directory that appears later', async () => {
    const dir = path.join(temp.make(), 'output');
    const lines = new StreamLines(dir, 'task.000003', 1, 'stdout');
    expect(await drain(lines)).toEqual([]); // no directory yet
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'a.pfout'), file(f('stdout', 'task.000001', 'not mine\n')));
    writeFileSync(path.join(dir, 'notes.txt'), 'not a stream file');
    expect(await drain(lines)).toEqual([]);
    expect(lines.file).toBeUndefined();
    writeFileSync(path.join(dir, 'b.pfout'), file(f('stdout', 'task.000003', 'mine\n')));
    expect(await drain(lines)).toEqual(['mine']);
    expect(lines.file).toBe(path.join(dir, 'b.pfout'));
    await lines.close();
  });

  it('never reads a file again from its start, nor other files once it found its own', async () => {
    const dir = temp.make();
    const a = path.join(dir, 'a.pfout');
    const b = path.join(dir, 'b.pfout');
    writeFileSync(a, file(f('stdout', 'task.000001', 'not mine\n')));
    const lines = new StreamLines(dir, 'task.000002', 1, 'stdout');
    expect(await drain(lines)).toEqual([]);
    // bytes already scanned are damaged: a scan that started over would fail on them
    writeFileSync(a, Buffer.from('DAMAGED!'), { flag: 'r+' });
    appendFileSync(a, f('stdout', 'task.000001', 'still not mine\n'));
    writeFileSync(b, file(f('stdout', 'task.000002', 'mine\n')));
    expect(await drain(lines)).toEqual(['mine']);
    // its file found, the others are not read: not even damage after what was scanned
    appendFileSync(a, Buffer.from('more damage'));
    appendFileSync(b, f('stdout', 'task.000002', 'more\n'));
    expect(await drain(lines)).toEqual(['more']);
    await lines.close();
  });

  it('a file damaged where it is read: an error naming the file', async () => {
    const dir = temp.make();
    writeFileSync(path.join(dir, 'a.pfout'), Buffer.from('not a stream file at all'));
    const lines = new StreamLines(dir, 'task.000001', 1, 'stdout');
    await expect(lines.read()).rejects.toThrow(
      `${path.join(dir, 'a.pfout')}: not an output stream file (no PFSTRM1 header)`,
    );
    await lines.close();
  });

  it('reads a big file a chunk at a time, each line once, in order', async () => {
    const dir = temp.make();
    const mine: string[] = [];
    const frames: Buffer[] = [];
    const noise = Buffer.alloc(60_000, 'n'); // other tasks' big frames to skip
    for (let i = 0; i < 400; i++) {
      const line = `line ${i} ${'x'.repeat(i % 97)}`;
      mine.push(line);
      frames.push(f('stdout', `task.${String(i % 7).padStart(6, '0')}`, noise));
      // lines cut across frames: the first half ends one frame, the rest starts the next
      const half = Math.floor(line.length / 2);
      frames.push(f('stdout', 'task.999999', line.slice(0, half)));
      frames.push(f('stdout', 'task.999999', `${line.slice(half)}\n`));
    }
    frames.push(f('end', 'task.999999'));
    const bytes = file(...frames);
    expect(bytes.length).toBeGreaterThan(20 * STREAM_CHUNK);
    writeFileSync(path.join(dir, 'a.pfout'), bytes);
    const lines = new StreamLines(dir, 'task.999999', 1, 'stdout');
    const got: string[] = [];
    let reads = 0;
    do {
      got.push(...(await lines.read()));
      reads++;
    } while (await lines.more());
    expect(got).toEqual(mine);
    expect(reads).toBeGreaterThanOrEqual(Math.floor(bytes.length / STREAM_CHUNK));
    expect(lines.complete).toBe(true);
    await lines.close();
  });
});
