import { describe, expect, it } from '@jest/globals';
import { unpack } from 'msgpackr';
import {
  MAX_DEPTH,
  encodeResult,
  unencodable,
} from '../../../../../../src/components/executor/functions/worker/encodable';

class Point {
  constructor(
    readonly x: number,
    readonly y: number,
  ) {}
}

function decoded(value: unknown): unknown {
  const r = encodeResult(value, 1 << 20);
  if (!r.ok) throw new Error(r.error.message);
  return unpack(r.bytes);
}

describe('function results: what can be encoded', () => {
  it('takes plain data, nested', () => {
    const value = {
      n: null,
      t: true,
      i: 42,
      neg: -7,
      f: 1.5,
      s: 'text',
      big: 2n ** 40n,
      bytes: new Uint8Array([1, 2, 3]),
      list: [1, [2, { deep: 'yes' }]],
      bare: Object.create(null) as object,
      when: new Date('2026-01-02T03:04:05.678Z'),
    };
    const back = decoded(value) as Record<string, unknown>;
    expect(back).toMatchObject({ n: null, t: true, i: 42, neg: -7, f: 1.5, s: 'text' });
    expect(back.list).toEqual([1, [2, { deep: 'yes' }]]);
    expect([...(back.bytes as Uint8Array)]).toEqual([1, 2, 3]);
    expect((back.when as Date).toISOString()).toBe('2026-01-02T03:04:05.678Z');
    expect(back.big).toBe(2n ** 40n); // a BigInt goes as int64, and comes back as one
  });

  it('encodes nothing returned as nil, and leaves undefined properties out', () => {
    expect(decoded(undefined)).toBeNull();
    expect(decoded({ a: 1, gone: undefined })).toEqual({ a: 1 });
  });

  it.each([
    [{ items: [0, 1, 2, { fn: () => 1 }] }, 'result.items[3].fn: a function cannot be encoded'],
    [{ s: Symbol('x') }, 'result.s: a symbol cannot be encoded'],
    [[1, undefined], 'result[1]: undefined in an array cannot be encoded (use null)'],
    // eslint-disable-next-line no-sparse-arrays
    [[1, , 3], 'result[1]: undefined in an array cannot be encoded (use null)'],
    [{ 'a key': new Map() }, 'result["a key"]: a Map cannot be encoded'],
    [{ p: new Point(1, 2) }, 'result.p: an instance of class Point cannot be encoded'],
    [{ e: new Error('x') }, 'result.e: an instance of class Error cannot be encoded'],
    [{ s: new Set([1]) }, 'result.s: a Set cannot be encoded'],
    [{ f: new Float64Array(2) }, 'result.f: a Float64Array cannot be encoded'],
    [{ b: new ArrayBuffer(2) }, 'result.b: a ArrayBuffer cannot be encoded'],
    [{ d: new Date(NaN) }, 'result.d: an invalid Date cannot be encoded'],
    [{ n: 2n ** 64n }, 'result.n: a BigInt beyond 64 bits cannot be encoded'],
    [{ n: -(2n ** 63n) - 1n }, 'result.n: a BigInt beyond 64 bits cannot be encoded'],
    [() => 1, 'result: a function cannot be encoded'],
  ])('refuses %p, naming its path', (value, message) => {
    expect(unencodable(value)).toContain(message);
    const r = encodeResult(value, 1 << 20);
    expect(r).toMatchObject({ ok: false, error: { name: 'EncodeError' } });
    expect(!r.ok && r.error.message).toContain(message);
  });

  it('takes the 64-bit BigInt bounds', () => {
    expect(unencodable([2n ** 64n - 1n, -(2n ** 63n)])).toBeUndefined();
  });

  it('names a cycle and where it leads back to', () => {
    const a: Record<string, unknown> = { list: [] };
    const b = { up: a };
    (a.list as unknown[]).push(b);
    expect(unencodable({ top: a })).toBe(
      'result.top.list[0].up: a cycle (it is the value at result.top)',
    );
  });

  it('takes an object seen twice that is not a cycle', () => {
    const shared = { v: 1 };
    expect(decoded({ a: shared, b: [shared] })).toEqual({ a: { v: 1 }, b: [{ v: 1 }] });
  });

  it('refuses nesting deeper than MAX_DEPTH', () => {
    let deep: unknown = 1;
    for (let i = 0; i <= MAX_DEPTH; i++) deep = [deep];
    expect(unencodable(deep)).toContain(`nested deeper than ${MAX_DEPTH} levels`);
    let ok: unknown = 1;
    for (let i = 0; i < MAX_DEPTH; i++) ok = [ok];
    expect(encodeResult(ok, 1 << 20).ok).toBe(true);
  });

  it('refuses a result over the size limit, naming both sizes', () => {
    const r = encodeResult('x'.repeat(2000), 1024);
    expect(r).toEqual({
      ok: false,
      error: {
        name: 'ResultTooLarge',
        message:
          'result is 2003 bytes (2.0 KiB) encoded, over the limit of 1024 bytes (1.0 KiB): ' +
          'return less, or write it to a file and return its path',
      },
    });
    expect(encodeResult('x'.repeat(1000), 1024).ok).toBe(true);
  });

  it('gives each result bytes of its own', () => {
    const a = encodeResult({ a: 1 }, 1024);
    const b = encodeResult({ b: 2 }, 1024);
    expect(a.ok && b.ok && unpack(a.bytes)).toEqual({ a: 1 });
  });
});
