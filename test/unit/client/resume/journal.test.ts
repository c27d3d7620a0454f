import { afterEach, describe, expect, it } from '@jest/globals';
import {
  appendFileSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  watch,
  writeFileSync,
} from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DeliveredCounters } from '../../../../src/client/resume/delivered';
import { Journal } from '../../../../src/client/resume/journal';
import { UsageError } from '../../../../src/errors';

const dirs: string[] = [];
function tmp(): string {
  const d = mkdtempSync(path.join(os.tmpdir(), 'pf-journal-'));
  dirs.push(d);
  return d;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('Journal', () => {
  it('reads back what was appended, in order', () => {
    const dir = tmp();
    const j = Journal.create(dir);
    j.append({ t: 'pilots-added', mgr: 'tmgr.0000', pilots: ['p1'] });
    j.append({ t: 'tasks', mgr: 'tmgr.0000', tasks: [['t1', { executable: '/bin/true' }]] });
    expect(Journal.read(dir).entries).toEqual([
      { t: 'pilots-added', mgr: 'tmgr.0000', pilots: ['p1'] },
      { t: 'tasks', mgr: 'tmgr.0000', tasks: [['t1', { executable: '/bin/true' }]] },
    ]);
  });

  it('cuts a torn last line (a crash mid-append), so the next append starts a clean line', () => {
    const dir = tmp();
    const j = Journal.create(dir);
    j.append({ t: 'pilots-added', mgr: 'tmgr.0000', pilots: ['p1'] });
    appendFileSync(j.file, '{"t":"tasks","mgr":"tm');
    const { journal, entries } = Journal.read(dir);
    expect(entries).toHaveLength(1);
    journal.append({ t: 'pilots-added', mgr: 'tmgr.0000', pilots: ['p2'] });
    expect(Journal.read(dir).entries.map((e) => e.t === 'pilots-added' && e.pilots[0])).toEqual([
      'p1',
      'p2',
    ]);
    expect(readFileSync(j.file, 'utf8').endsWith('\n')).toBe(true);
  });

  it('refuses a journal damaged before its end, naming the file and line', () => {
    const dir = tmp();
    writeFileSync(path.join(dir, 'journal.jsonl'), '{"t":"agent","pilot":"p1"}\nnot json\n{}\n');
    expect(() => Journal.read(dir)).toThrow(UsageError);
    expect(() => Journal.read(dir)).toThrow(/journal\.jsonl line 2 is not JSON/);
  });

  it('hands each entry to its mirror once written to the file, in order, and never one it could not write', () => {
    const dir = tmp();
    const j = Journal.create(dir);
    const mirrored: unknown[] = [];
    j.mirrorTo((es) => mirrored.push(...es));
    j.append({ t: 'pilots-added', mgr: 'tmgr.0000', pilots: ['p1'] });
    j.append({ t: 'closed', at: 1 });
    expect(mirrored).toEqual(Journal.read(dir).entries);
    rmSync(dir, { recursive: true, force: true });
    // a file that cannot be written: refused, and not mirrored
    expect(() => j.append({ t: 'resumed', at: 2 })).toThrow();
    expect(mirrored).toHaveLength(2);
  });

  it('is rebuilt from its entries (a session resumed from its database) and read back the same', () => {
    const entries = [
      { t: 'pilots-added' as const, mgr: 'tmgr.0000', pilots: ['p1'] },
      { t: 'closed' as const, at: 3 },
    ];
    const dir = tmp();
    Journal.rebuild(dir, entries);
    expect(Journal.read(dir).entries).toEqual(entries);
    expect(statSync(path.join(dir, 'journal.jsonl')).mode & 0o777).toBe(0o600);
    // never over a journal that exists
    expect(() => Journal.rebuild(dir, entries)).toThrow(/EEXIST/);
  });

  it('says there is no session to resume when the journal is missing', () => {
    expect(() => Journal.read(tmp())).toThrow(/cannot resume: no session journal/);
  });
});

describe('DeliveredCounters', () => {
  it('keeps each slot across a reopen, and 0 for slots never written', () => {
    const dir = tmp();
    const a = DeliveredCounters.open(dir);
    a.set(1, 12);
    a.set(0, 3);
    a.set(1, 13);
    a.close();
    const b = DeliveredCounters.open(dir);
    expect([b.get(0), b.get(1), b.get(2)]).toEqual([3, 13, 0]);
    b.set(2, 2 ** 40);
    b.close();
    expect(DeliveredCounters.open(dir).get(2)).toBe(2 ** 40);
  });

  it('writes a count of unheard events soon, with the next count written, or at close', async () => {
    const dir = tmp();
    const onDisk = (): number[] => {
      const r = DeliveredCounters.open(dir);
      const out = [r.get(0), r.get(1)];
      r.close();
      return out;
    };
    const a = DeliveredCounters.open(dir);
    a.setSoon(0, 5);
    expect(onDisk()).toEqual([0, 0]); // not yet: no write per bulk
    a.set(1, 7); // a heard event's count is written at once, and takes the other along
    expect(onDisk()).toEqual([5, 7]);
    a.setSoon(0, 9);
    await new Promise<void>((resolve) => {
      // the write is due within 50 ms: wait for the file to change
      const w = watch(path.join(dir, 'delivered'), () => {
        w.close();
        resolve();
      });
    });
    expect(onDisk()).toEqual([9, 7]);
    a.setSoon(0, 11);
    a.close();
    expect(onDisk()).toEqual([11, 7]);
  });

  it('tells its mirror the counts after each change, and is rebuilt from them read back the same', () => {
    const dir = tmp();
    const a = DeliveredCounters.open(dir);
    const seen: number[][] = [];
    a.mirrorTo((counts) => seen.push(Array.from(counts, (c) => c ?? 0)));
    a.set(2, 4);
    a.setSoon(0, 1);
    a.close();
    expect(seen).toEqual([
      [0, 0, 4],
      [1, 0, 4],
    ]);
    const other = tmp();
    DeliveredCounters.rebuild(other, [1, 0, 4]);
    const b = DeliveredCounters.open(other);
    expect([b.get(0), b.get(1), b.get(2), b.get(3)]).toEqual([1, 0, 4, 0]);
    b.close();
    expect(statSync(path.join(other, 'delivered')).mode & 0o777).toBe(0o600);
  });
});
