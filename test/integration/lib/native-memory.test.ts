import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import {
  nativeMemory,
  nativeMemoryMissing,
  nativeMemoryPath,
} from '../../../src/lib/native-memory';

const addon = nativeMemoryPath();
const suite = addon === undefined ? describe.skip : describe;
const title =
  addon === undefined
    ? 'native memory addon (skipped: dist/native/pf-memory.node not built)'
    : 'native memory addon';

/**
 * In a child with --expose-gc: 2,000 blocks of 64 KiB (below glibc's mmap threshold, so they
 * come from the heap) with every tenth kept, so that the freed ones lie between kept ones and
 * free() cannot give them back by itself; then collected, then trimmed.
 */
const SCRIPT = `
const m = require(process.argv[1]);
const rss = () => Number(/VmRSS:\\s+(\\d+)/.exec(require('fs').readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
let blocks = Array.from({ length: 2000 }, () => Buffer.allocUnsafeSlow(65536).fill(1));
const kept = blocks.filter((_, i) => i % 10 === 0);
blocks = undefined;
// V8 frees the blocks of collected buffers on a background thread after a GC, and finishes
// that work at the start of the next one
for (let i = 0; i < 10 && m.info().freeBytes < 100 * 1048576; i++) global.gc();
const free = m.info().freeBytes / 1048576;
const before = rss();
const trimmed = m.trim();
const after = rss();
process.stdout.write(JSON.stringify({ free, before, after, trimmed, kept: kept.length, info: m.info() }));
`;

/**
 * In a child: 200,000 small objects kept through many scavenges, so V8 grows its young
 * generation, then dropped; then the heap reduced.
 */
const YOUNG = `
const v8 = require('v8');
const m = require(process.argv[1]);
const young = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 1048576;
let keep = [];
for (let i = 0; i < 400000; i++) {
  keep.push({ a: i, b: [i, i + 1], c: 'x' + i });
  if (keep.length > 200000) keep = keep.slice(100000);
}
const before = young();
keep = undefined;
m.reduceHeap();
process.stdout.write(JSON.stringify({ before, after: young() }));
`;

suite(title, () => {
  it('loads, and reports the C heap', () => {
    expect(nativeMemoryMissing()).toBeUndefined();
    const info = nativeMemory()!.info();
    for (const k of ['heapBytes', 'mmapBytes', 'inUseBytes', 'freeBytes'] as const) {
      expect(Number.isSafeInteger(info[k]) && info[k] >= 0).toBe(true);
    }
    expect(info.inUseBytes).toBeLessThanOrEqual(info.heapBytes);
  });

  it('gives freed heap memory back to the kernel', () => {
    const out = execFileSync(process.execPath, ['--expose-gc', '-e', SCRIPT, addon!], {
      encoding: 'utf8',
    });
    const r = JSON.parse(out) as { free: number; before: number; after: number; trimmed: boolean };
    // ~112 MiB were freed between kept blocks; the trim returns most of it
    expect(r.free).toBeGreaterThan(100);
    expect(r.trimmed).toBe(true);
    expect(r.before - r.after).toBeGreaterThan(80);
  });

  it("shrinks V8's young generation", () => {
    const out = execFileSync(process.execPath, ['-e', YOUNG, addon!], { encoding: 'utf8' });
    const r = JSON.parse(out) as { before: number; after: number };
    expect(r.before).toBeGreaterThanOrEqual(8); // MiB: grown from its 1 MiB start
    expect(r.after).toBeLessThanOrEqual(2);
  });
});
