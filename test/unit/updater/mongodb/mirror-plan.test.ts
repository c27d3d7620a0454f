import { describe, expect, it } from '@jest/globals';
import { entriesOf, partsOf, PART_CHARS } from '../../../../src/updater/mongodb/mirror-plan';

describe('partsOf and entriesOf (a journal kept in MongoDB)', () => {
  it('keeps a small entry in one document and reads it back', () => {
    const parts = partsOf('s1', 0, { t: 'closed', at: 5 });
    expect(parts).toEqual([{ session: 's1', n: 0, i: 0, of: 1, text: '{"t":"closed","at":5}' }]);
    expect(entriesOf(parts)).toEqual([{ t: 'closed', at: 5 }]);
  });

  it('cuts an entry larger than a part into parts that join back, multi-byte text included', () => {
    const entry = { t: 'tasks', tasks: Array.from({ length: 50 }, (_, i) => [`t${i}`, 'é✓𝄞']) };
    const parts = partsOf('s1', 3, entry, 64);
    expect(parts.length).toBe(Math.ceil(JSON.stringify(entry).length / 64));
    expect(parts.every((p) => p.text.length <= 64 && p.of === parts.length && p.n === 3)).toBe(
      true,
    );
    const before = [0, 1, 2].flatMap((n) => partsOf('s1', n, { n }));
    expect(entriesOf([...before, ...parts])).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }, entry]);
  });

  it('stops at the first entry missing or incomplete: what follows was never meant to be kept', () => {
    const all = [0, 1, 2, 3].flatMap((n) => partsOf('s1', n, { n, pad: 'x'.repeat(40) }, 16));
    const withoutPart = all.filter((p) => !(p.n === 2 && p.i === 1));
    expect(entriesOf(withoutPart)).toEqual([0, 1].map((n) => ({ n, pad: 'x'.repeat(40) })));
    const withoutEntry = all.filter((p) => p.n !== 1);
    expect(entriesOf(withoutEntry)).toEqual([{ n: 0, pad: 'x'.repeat(40) }]);
    const lastCut = all.filter((p) => !(p.n === 3 && p.i === p.of - 1));
    expect(entriesOf(lastCut)).toHaveLength(3);
    expect(entriesOf([])).toEqual([]);
  });

  it('names the entry whose text is not JSON', () => {
    expect(() => entriesOf([{ session: 's', n: 0, i: 0, of: 1, text: '{"t":' }])).toThrow(
      /journal entry 0 is not JSON/,
    );
  });

  it('keeps a part well under the 16 MB document limit', () => {
    // 4 bytes per character at worst in UTF-8
    expect(PART_CHARS * 4).toBeLessThan(16 * 1024 * 1024);
  });
});
