import { describe, expect, it } from '@jest/globals';
import { appendFileSync, truncateSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { FileLines } from '../../../src/lib/file-lines';
import { tempDirs } from '../../support/temp-dirs';

describe('FileLines', () => {
  const temp = tempDirs('pf-lines-');

  it('reads a growing file as lines: none before it exists, a character split across writes kept whole', async () => {
    const file = path.join(temp.make(), 'out');
    const lines = new FileLines(file);
    expect(await lines.read()).toEqual([]);
    const euro = Buffer.from('€\n'); // 3 bytes, then the newline
    writeFileSync(file, Buffer.concat([Buffer.from('a\nb'), euro.subarray(0, 1)]));
    expect(await lines.read()).toEqual(['a']);
    appendFileSync(file, euro.subarray(1));
    expect(await lines.read()).toEqual(['b€']);
    appendFileSync(file, 'tail');
    expect(await lines.read()).toEqual([]);
    expect(lines.rest()).toBe('tail');
    expect(lines.rest()).toBeUndefined();
    await lines.close();
  });

  it('a file truncated and written again is read from its start', async () => {
    const file = path.join(temp.make(), 'out');
    writeFileSync(file, 'one\ntwo\n');
    const lines = new FileLines(file);
    expect(await lines.read()).toEqual(['one', 'two']);
    truncateSync(file, 0);
    appendFileSync(file, 'x\n');
    expect(await lines.read()).toEqual(['x']);
    await lines.close();
  });

  it('a big file comes in chunks, each line once', async () => {
    const file = path.join(temp.make(), 'out');
    const all = Array.from({ length: 50_000 }, (_, i) => `line ${i}`);
    writeFileSync(file, all.join('\n') + '\n');
    const lines = new FileLines(file);
    const got: string[] = [];
    let reads = 0;
    do {
      got.push(...(await lines.read()));
      reads++;
    } while (await lines.more());
    expect(got).toEqual(all);
    expect(reads).toBeGreaterThan(1);
    await lines.close();
  });
});
