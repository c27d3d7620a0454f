import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import type { Notification } from '../../../src/generated';
import { SpillQueue } from '../../../src/updater/spill-queue';
import { tmpfsPerTest, tmpfsUnavailable } from '../../support/tmpfs';
import { makeNotes, RecordingLogger } from './helpers';

const title =
  tmpfsUnavailable === undefined
    ? 'SpillQueue on a full disk (a real tmpfs)'
    : `SpillQueue on a full disk (skipped: ${tmpfsUnavailable})`;
const d = tmpfsUnavailable === undefined ? describe : describe.skip;

d(title, () => {
  const mount = tmpfsPerTest('256k');

  it('keeps in memory what the full disk refuses, and writes it after a write cut short once space is back', () => {
    const fsys = mount();
    const log = new RecordingLogger();
    const q = new SpillQueue({
      spill: { dir: fsys.dir, memoryLimit: 0 },
      name: 'uw0',
      frameSize: 100,
      log,
      retryMs: 0,
    });
    try {
      const notes = makeNotes(5_000);
      q.push(notes.slice(0, 1_000));
      expect(q.spilled).toBe(1_000);
      const size = fs.statSync(q.file!).size;
      fsys.fill();
      // the spill file's last page takes part of this write, then the disk is full
      q.push(notes.slice(1_000, 3_000));
      expect([q.spilled, q.held]).toEqual([1_000, 2_000]);
      expect(fs.statSync(q.file!).size).toBeGreaterThan(size); // cut short: not a whole frame
      const warned = log.entries.filter((e) => e.level === 'warn');
      expect(warned).toHaveLength(1);
      expect(warned[0]!.meta).toMatchObject({ errno: 'ENOSPC', path: q.file });

      fsys.free();
      // written from the end of the last whole frame: what the cut write left is overwritten
      q.push(notes.slice(3_000, 4_000));
      expect([q.spilled, q.held]).toEqual([4_000, 0]);
      const out: Notification[] = [];
      out.push(...q.shift(1_500));
      q.push(notes.slice(4_000));
      while (q.length > 0) out.push(...q.shift(700));
      expect(out).toEqual(notes);
      expect(fs.readdirSync(fsys.dir)).toEqual([]);
    } finally {
      q.close();
    }
  });
});
