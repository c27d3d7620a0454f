import { describe, expect, it } from '@jest/globals';
import {
  ChunkWindow,
  chunkProblem,
  MAX_CHUNK_BYTES,
  ProgressThrottle,
} from '../../../src/transport/transfer-flow';
import { normalPath, pathProblem } from '../../../src/transport/file-paths';

describe('ChunkWindow', () => {
  it('asks for at most a window of chunks, then one more per answer, in order', () => {
    const w = new ChunkWindow(10, 3, 2);
    expect([w.next(), w.next(), w.next()]).toEqual([
      { offset: 0, length: 3 },
      { offset: 3, length: 3 },
      undefined,
    ]);
    expect(w.answer({ offset: 0, length: 3 })).toBe(true);
    expect(w.done).toBe(3);
    expect([w.next(), w.next()]).toEqual([{ offset: 6, length: 3 }, undefined]);
    w.answer({ offset: 3, length: 3 });
    expect([w.next(), w.next()]).toEqual([{ offset: 9, length: 1 }, undefined]);
    w.answer({ offset: 6, length: 3 });
    expect(w.finished).toBe(false);
    expect(w.next()).toBeUndefined(); // all asked
    w.answer({ offset: 9, length: 1 });
    expect(w.finished).toBe(true);
    expect(w.done).toBe(10);
  });

  it('refuses an answer out of turn, or one never asked for', () => {
    const w = new ChunkWindow(10, 5, 4);
    expect(w.answer({ offset: 0, length: 5 })).toBe(false);
    w.next();
    w.next();
    expect(w.answer({ offset: 5, length: 5 })).toBe(false);
    expect(w.answer({ offset: 0, length: 5 })).toBe(true);
  });

  it('is finished at once for an empty file, asking for nothing', () => {
    const w = new ChunkWindow(0);
    expect(w.finished).toBe(true);
    expect(w.next()).toBeUndefined();
  });

  it('refuses chunk sizes the channel does not carry', () => {
    expect(() => new ChunkWindow(1, 0)).toThrow(RangeError);
    expect(() => new ChunkWindow(1, MAX_CHUNK_BYTES + 1)).toThrow(/must be 1\.\./);
    expect(() => new ChunkWindow(1, 1, 0)).toThrow(/window/);
  });
});

describe('chunkProblem', () => {
  it('takes the next chunk in order and within the size', () => {
    expect(chunkProblem(4, 10, 4, 6)).toBeUndefined();
    expect(chunkProblem(4, 10, 8, 2)).toBe('chunk at offset 8, expected 4');
    expect(chunkProblem(4, 10, 4, 7)).toBe('chunk ends at 11, past the size 10');
  });
});

describe('ProgressThrottle', () => {
  it('reports the start and the end, and between them only every 1% and 250 ms', () => {
    const p = new ProgressThrottle(10_000);
    expect(p.report(0, 0)).toBe(true);
    expect(p.report(5_000, 100)).toBe(false); // 50% but too soon
    expect(p.report(5_000, 250)).toBe(true);
    expect(p.report(5_050, 10_000)).toBe(false); // late but under 1%
    expect(p.report(5_100, 10_000)).toBe(true);
    expect(p.report(10_000, 10_001)).toBe(true); // the end, however soon
    expect(p.report(10_000, 20_000)).toBe(false); // and only once
  });

  it('reports an empty transfer once', () => {
    const p = new ProgressThrottle(0);
    expect(p.report(0, 0)).toBe(true);
    expect(p.report(0, 1_000)).toBe(false);
  });

  it('reports a slow transfer about a hundred times at most', () => {
    const p = new ProgressThrottle(1_000_000);
    let n = 0;
    for (let done = 0, t = 0; done <= 1_000_000; done += 1_000, t += 1_000) {
      if (p.report(done, t)) n++;
    }
    expect(n).toBeLessThanOrEqual(101);
    expect(n).toBeGreaterThanOrEqual(100);
  });
});

describe('client paths', () => {
  it('takes absolute paths in normal form only', () => {
    expect(pathProblem('/data/in.txt')).toBeUndefined();
    expect(pathProblem('data/in.txt')).toBe('is not absolute');
    expect(pathProblem('/')).toBe('is the root directory');
    expect(pathProblem('/data/../etc/passwd')).toBe('is not in normal form (/etc/passwd)');
    expect(pathProblem('/data//x')).toBe('is not in normal form (/data/x)');
    expect(pathProblem('/data/./x')).toBe('is not in normal form (/data/x)');
    expect(pathProblem('/data/')).toBe('is not in normal form (/data)');
    expect(pathProblem('/data/x\0y')).toBe('has a NUL byte');
  });

  it('normalizes lexically', () => {
    expect(normalPath('/a/b/../c/')).toBe('/a/c');
    expect(normalPath('/../../x')).toBe('/x');
    expect(normalPath('rel/./x')).toBe('rel/x');
  });
});
