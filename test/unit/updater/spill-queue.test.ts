import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Notification } from '../../../src/generated';
import { SpillQueue, type SpillQueueOptions } from '../../../src/updater/spill-queue';
import { makeNotes, RecordingLogger } from '../../integration/updater/helpers';

describe('SpillQueue', () => {
  let dir: string;
  let log: RecordingLogger;
  const queues: SpillQueue[] = [];

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-spill-'));
    log = new RecordingLogger();
  });

  afterEach(() => {
    for (const q of queues.splice(0)) q.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const queue = (opts: Partial<SpillQueueOptions> = {}): SpillQueue => {
    const q = new SpillQueue({
      spill: { dir, memoryLimit: 1_000 },
      name: 'w/0',
      frameSize: 100,
      log,
      ...opts,
    });
    queues.push(q);
    return q;
  };
  const spillFiles = (): string[] =>
    fs.readdirSync(dir).filter((f) => f.startsWith('updates-spill.'));

  /** Pushes `notes` in bulks of `bulk`, taking `take` after each, then takes the rest. */
  const through = (q: SpillQueue, notes: Notification[], bulk: number, take: number) => {
    const out: Notification[] = [];
    for (let i = 0; i < notes.length; i += bulk) {
      q.push(notes.slice(i, i + bulk));
      out.push(...q.shift(take));
    }
    while (q.length > 0) out.push(...q.shift(take));
    return out;
  };

  it('keeps what stays under the limit in memory, with no file', () => {
    const q = queue();
    const notes = makeNotes(1_000);
    q.push(notes);
    expect([q.held, q.spilled, q.length]).toEqual([1_000, 0, 1_000]);
    expect(spillFiles()).toEqual([]);
    expect(q.shift(600)).toEqual(notes.slice(0, 600));
    expect(q.shift(600)).toEqual(notes.slice(600));
    expect(q.length).toBe(0);
  });

  it('spills past the limit into a private file of its own, and gives everything back in order', () => {
    const q = queue();
    const notes = makeNotes(20_000);
    for (let i = 0; i < notes.length; i += 64) q.push(notes.slice(i, i + 64));
    expect([q.held, q.spilled]).toEqual([1_000, 19_000]);
    const [file] = spillFiles();
    expect(path.join(dir, file!)).toBe(q.file);
    expect(file).toMatch(/^updates-spill\.w_0\.[0-9a-f]{8}$/);
    expect(fs.statSync(q.file!).mode & 0o777).toBe(0o600);

    const out = q.shift(1_500); // the memory part, then a first read of the file
    // read back a chunk at a time: a few batches held, never the file
    expect(q.held).toBeLessThan(2_000);
    expect(q.spilled).toBeGreaterThan(16_000);
    expect(q.held + q.spilled).toBe(18_500);
    // later arrivals go behind the file until it is drained
    out.push(...through(q, makeNotes(3_000, 'later'), 50, 100));
    expect(out).toEqual([...notes, ...makeNotes(3_000, 'later')]);
    expect(spillFiles()).toEqual([]);
  });

  it('keeps the order when pushes and takes interleave across the limit many times', () => {
    const q = queue({ spill: { dir, memoryLimit: 200 }, frameSize: 7 });
    const notes = makeNotes(10_000);
    const out: Notification[] = [];
    // pushes outrun takes, then takes outrun pushes: the file fills, drains, fills again
    for (let i = 0, k = 0; i < notes.length; i += 90, k++) {
      q.push(notes.slice(i, i + 90));
      out.push(...q.shift(k % 40 < 20 ? 30 : 150));
      expect(q.held).toBeLessThanOrEqual(2_000); // the limit, or one read back: 64 KiB of frames
    }
    while (q.length > 0) out.push(...q.shift(33));
    expect(out).toEqual(notes);
    expect(spillFiles()).toEqual([]);
  });

  it('without a spill directory keeps everything in memory', () => {
    const q = new SpillQueue({ name: 'w', frameSize: 100, log });
    queues.push(q);
    const notes = makeNotes(60_000);
    q.push(notes);
    expect([q.held, q.spilled, q.file]).toEqual([60_000, 0, undefined]);
    expect(q.shift(60_000)).toEqual(notes);
  });

  it('keeps in memory what it cannot write, warns once, and spills again once it can', () => {
    const missing = path.join(dir, 'later');
    const q = queue({ spill: { dir: missing, memoryLimit: 100 }, retryMs: 0 });
    const notes = makeNotes(1_000);
    for (let i = 0; i < 600; i += 50) q.push(notes.slice(i, i + 50));
    expect([q.held, q.spilled]).toEqual([600, 0]);
    const warned = log.entries.filter((e) => e.level === 'warn');
    expect(warned).toHaveLength(1);
    expect(warned[0]!.message).toBe('cannot spill notifications to disk: they stay in memory');
    expect(warned[0]!.meta).toMatchObject({ errno: 'ENOENT', path: q.file });
    expect(path.dirname(q.file!)).toBe(missing);

    fs.mkdirSync(missing);
    q.push(notes.slice(600, 700)); // the next push writes what waited, and itself
    expect([q.held, q.spilled]).toEqual([100, 600]);
    expect(log.entries.map((e) => e.message)).toContain('spilling notifications to disk again');
    expect(fs.statSync(q.file!).mode & 0o777).toBe(0o600);
    expect(through(q, notes.slice(700), 50, 70)).toEqual(notes);
    expect(fs.readdirSync(missing)).toEqual([]);
  });

  it('gives back what it could not write, in order, when the store catches up first', () => {
    const q = queue({ spill: { dir: path.join(dir, 'none'), memoryLimit: 10 } });
    const notes = makeNotes(500);
    expect(through(q, notes, 40, 25)).toEqual(notes);
    expect(log.entries.filter((e) => e.level === 'warn')).toHaveLength(1);
  });

  it('removes its file at close, with what it held', () => {
    const q = queue({ spill: { dir, memoryLimit: 0 } });
    q.push(makeNotes(300));
    expect([q.held, q.spilled, spillFiles().length]).toEqual([0, 300, 1]);
    q.close();
    expect([q.length, spillFiles().length]).toEqual([0, 0]);
  });

  it('refuses a memory limit that is not a count, and no directory', () => {
    expect(() => queue({ spill: { dir, memoryLimit: 1.5 } })).toThrow(
      'spill.memoryLimit must be an integer >= 0, got 1.5',
    );
    expect(() => queue({ spill: { dir: '' } })).toThrow('spill.dir must name a directory');
  });
});
