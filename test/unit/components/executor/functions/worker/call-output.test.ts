import { describe, expect, it } from '@jest/globals';
import { OutputCap } from '../../../../../../src/components/executor/process/helper/output-cap';
import {
  CallOutput,
  chunkBytes,
  type StreamIndex,
} from '../../../../../../src/components/executor/functions/worker/call-output';

/** What OutputCap keeps of the same writes, per stream: what a helper frames of a task. */
function helperKeeps(cap: number, writes: [StreamIndex, string][]): [string, string] {
  const c = new OutputCap(cap);
  const out = ['', ''];
  for (const [k, s] of writes) {
    const now = c.take(k, Buffer.from(s));
    if (now !== undefined) out[k] += now.toString();
  }
  for (const p of c.release()) out[p.k] += p.data.toString();
  return [out[0]!, out[1]!];
}

function callKeeps(cap: number, writes: [StreamIndex, string][]) {
  const c = new CallOutput(cap);
  for (const [k, s] of writes) c.write(k, Buffer.from(s));
  const r = c.result();
  return {
    stdout: r.stdout === undefined ? undefined : Buffer.from(r.stdout).toString(),
    stderr: r.stderr === undefined ? undefined : Buffer.from(r.stderr).toString(),
    dropped: r.dropped,
  };
}

/** A deterministic pseudo-random sequence (no Math.random in tests that must repeat). */
function lcg(seed: number): () => number {
  let x = seed;
  return () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

describe('CallOutput', () => {
  it('keeps every byte of each stream in order under its cap, and leaves a silent stream out', () => {
    expect(
      callKeeps(100, [
        [0, 'a\n'],
        [1, 'e\n'],
        [0, 'b\n'],
      ]),
    ).toEqual({
      stdout: 'a\nb\n',
      stderr: 'e\n',
      dropped: undefined,
    });
    expect(callKeeps(100, [[1, 'only err']])).toEqual({
      stdout: undefined,
      stderr: 'only err',
      dropped: undefined,
    });
    expect(callKeeps(100, [[0, '']])).toEqual({
      stdout: undefined,
      stderr: undefined,
      dropped: undefined,
    });
  });

  it('keeps the first and last halves with a marker on a line of its own', () => {
    const r = callKeeps(10, [[0, '0123456789abcdefghij']]);
    expect(r).toEqual({ stdout: '01234\n[pilotfish: 10 bytes dropped]\nfghij', dropped: 10 });
    // a head that ended in a line gets no newline before the marker
    expect(
      callKeeps(10, [
        [0, '0123\n'],
        [0, 'x'.repeat(10)],
      ]).stdout,
    ).toBe('0123\n[pilotfish: 5 bytes dropped]\nxxxxx');
  });

  it('keeps the same bytes per stream as a spawner helper keeps of a task', () => {
    const next = lcg(7);
    for (let round = 0; round < 200; round++) {
      const cap = 1 + Math.floor(next() * 300);
      const writes: [StreamIndex, string][] = [];
      for (let i = Math.floor(next() * 12); i > 0; i--) {
        const k: StreamIndex = next() < 0.5 ? 0 : 1;
        const len = Math.floor(next() * 120);
        const line = next() < 0.3 ? '\n' : '';
        writes.push([k, `${String.fromCharCode(97 + (i % 26)).repeat(len)}${line}`]);
      }
      const [out, err] = helperKeeps(cap, writes);
      const got = callKeeps(cap, writes);
      expect([got.stdout ?? '', got.stderr ?? '']).toEqual([out, err]);
    }
  });

  it('takes a write as a stream gets it: a string in its encoding, bytes copied', () => {
    expect(chunkBytes('hé', undefined).toString()).toBe('hé');
    expect(chunkBytes('6869', 'hex').toString()).toBe('hi');
    const bytes = new Uint8Array([104, 105]);
    const copy = chunkBytes(bytes, undefined);
    bytes[0] = 0;
    expect(copy.toString()).toBe('hi');
  });
});
