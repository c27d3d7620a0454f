import { afterAll, describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { DurableWriter, onLocalFileSystem } from '../../../../src/updater/embedded/durable-writer';

/** A clock the test moves, and inline operations that take the time the test says. */
function rig(): {
  writer: (inline: boolean) => DurableWriter;
  took: (ms: number) => void;
  calls: string[];
  advance: (ms: number) => void;
} {
  let t = 1_000;
  let cost = 0;
  const calls: string[] = [];
  const ops = {
    writeSync: (fd: number, b: Buffer, off: number) => {
      calls.push('writeSync');
      return fs.writeSync(fd, b, off);
    },
    fdatasyncSync: (fd: number) => {
      calls.push('fdatasyncSync');
      fs.fdatasyncSync(fd);
      t += cost;
    },
  };
  return {
    writer: (inline) =>
      new DurableWriter({ inline, now: () => t, ops, awayMs: 100, maxAwayMs: 350 }),
    took: (ms) => void (cost = ms),
    calls,
    advance: (ms) => void (t += ms),
  };
}

describe('DurableWriter', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-dw-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('writes and syncs on the event loop while that is quick, in the thread pool for a while after a slow one', async () => {
    const r = rig();
    const file = path.join(dir, 'a.log');
    const fh = await fsp.open(file, 'a');
    const w = r.writer(true);
    await w.write(fh, Buffer.from('one\n'));
    expect(r.calls).toEqual(['writeSync', 'fdatasyncSync']);
    r.took(5); // a disk that really syncs: three slow ones in a row, one alone is not enough
    await w.write(fh, Buffer.from('two\n'));
    r.took(0);
    await w.write(fh, Buffer.from('two\n'));
    r.took(5);
    await w.write(fh, Buffer.from('two\n'));
    await w.write(fh, Buffer.from('two\n'));
    expect(w.inline).toBe(true);
    await w.write(fh, Buffer.from('two\n'));
    expect(w.inline).toBe(false);
    r.calls.length = 0;
    await w.write(fh, Buffer.from('three\n')); // in the pool: no inline call
    expect(r.calls).toEqual([]);
    r.advance(100);
    expect(w.inline).toBe(true); // tried again: slow once is enough now, away twice as long
    await w.write(fh, Buffer.from('four\n'));
    r.advance(199);
    expect(w.inline).toBe(false);
    r.advance(1);
    expect(w.inline).toBe(true);
    await w.write(fh, Buffer.from('five\n'));
    r.advance(349); // capped at maxAwayMs
    expect(w.inline).toBe(false);
    r.advance(1);
    r.took(0);
    await w.write(fh, Buffer.from('six\n'));
    expect(w.inline).toBe(true);
    await fh.close();
    expect(fs.readFileSync(file, 'utf8')).toBe(`one\n${'two\n'.repeat(5)}three\nfour\nfive\nsix\n`);
  });

  it('never works on the event loop where it may not (a network file system)', async () => {
    const r = rig();
    const file = path.join(dir, 'b.log');
    const fh = await fsp.open(file, 'a');
    const w = r.writer(false);
    await w.write(fh, Buffer.alloc(100_000, 1));
    await fh.close();
    expect(r.calls).toEqual([]);
    expect(fs.statSync(file).size).toBe(100_000);
  });

  it('rejects with the error of the write, either way', async () => {
    const r = rig();
    fs.writeFileSync(path.join(dir, 'c.log'), '');
    const fh = await fsp.open(path.join(dir, 'c.log'), 'r'); // not open for writing
    await expect(r.writer(true).write(fh, Buffer.from('x'))).rejects.toMatchObject({
      code: 'EBADF',
    });
    await expect(r.writer(false).write(fh, Buffer.from('x'))).rejects.toMatchObject({
      code: 'EBADF',
    });
    await fh.close();
  });

  it('knows the local file systems from the rest', () => {
    expect(onLocalFileSystem(os.tmpdir())).toBe(true);
    expect(onLocalFileSystem('/dev/shm')).toBe(true);
    expect(onLocalFileSystem('/proc')).toBe(false);
    expect(onLocalFileSystem(path.join(dir, 'no-such-dir'))).toBe(false);
  });
});
