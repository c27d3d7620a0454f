import { describe, expect, it } from '@jest/globals';
import { plainDataIssues } from '../../../src/lib/plain-data';

class Point {
  x = 1;
}

describe('plainDataIssues', () => {
  it('passes plain JSON data, and skips undefined properties as JSON does', () => {
    const plain = {
      a: [1, 'x', true, null, { b: [] }],
      c: Object.create(null) as object,
      d: undefined,
    };
    expect(plainDataIssues(plain)).toEqual([]);
  });

  it('names the path and the kind of every value that is not JSON data', () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    const bad = {
      environment: new Map([['A', 'b']]),
      tags: /x/,
      when: new Date(0),
      bytes: Buffer.from('x'),
      floats: new Float32Array(2),
      set: new Set([1]),
      point: new Point(),
      fn: () => 1,
      list: [1, undefined, NaN, Infinity, 2n],
      'a/b': { '~': Symbol('s') },
    };
    expect(plainDataIssues(bad)).toEqual([
      { path: '/environment', message: 'must be JSON data (a Map is not)' },
      { path: '/tags', message: 'must be JSON data (a RegExp is not)' },
      { path: '/when', message: 'must be JSON data (a Date is not)' },
      { path: '/bytes', message: 'must be JSON data (a Buffer is not)' },
      { path: '/floats', message: 'must be JSON data (a Float32Array is not)' },
      { path: '/set', message: 'must be JSON data (a Set is not)' },
      { path: '/point', message: 'must be JSON data (an instance of Point is not)' },
      { path: '/fn', message: 'must be JSON data (a function is not)' },
      { path: '/list/1', message: 'must be JSON data (undefined is not: use null)' },
      { path: '/list/2', message: 'must be a finite number (NaN is not JSON)' },
      { path: '/list/3', message: 'must be a finite number (Infinity is not JSON)' },
      { path: '/list/4', message: 'must be JSON data (a bigint is not)' },
      { path: '/a~1b/~0', message: 'must be JSON data (a symbol is not)' },
    ]);
    expect(plainDataIssues(cycle)).toEqual([
      { path: '/self', message: 'must not be a cycle (it is the value 1 level up)' },
    ]);
  });

  it('names a cycle by where it leads back to, and takes a value seen twice that is not one', () => {
    const shared = { n: 1 };
    const list: unknown[] = [shared, shared];
    const top = { a: { list } };
    list.push({ up: top.a });
    expect(plainDataIssues(top)).toEqual([
      { path: '/a/list/2/up', message: 'must not be a cycle (it is the value 3 levels up)' },
    ]);
    expect(plainDataIssues({ x: [shared, { again: shared }] })).toEqual([]);
  });

  it('refuses nesting deeper than 512 levels', () => {
    let deep: unknown = [];
    for (let i = 0; i < 600; i++) deep = [deep];
    expect(plainDataIssues(deep)).toEqual([
      { path: '/0'.repeat(512), message: 'must nest at most 512 levels' },
    ]);
  });

  it('takes bytes, valid dates and non-finite numbers only in the zones given', () => {
    const zones = { function: { args: true } } as const;
    const desc = {
      function: { module: 'm', args: [Buffer.from('x'), new Uint8Array(1), new Date(0), NaN] },
      constructor: new Date(0),
    };
    expect(plainDataIssues(desc, zones)).toEqual([
      { path: '/constructor', message: 'must be JSON data (a Date is not)' },
    ]);
    expect(plainDataIssues({ function: { args: [new Date(NaN), new Map()] } }, zones)).toEqual([
      {
        path: '/function/args/0',
        message: 'must be JSON data (a Date is not; bytes and valid dates are)',
      },
      {
        path: '/function/args/1',
        message: 'must be JSON data (a Map is not; bytes and valid dates are)',
      },
    ]);
  });

  it('checks 100,000 task descriptions in well under a second', () => {
    const descs = Array.from({ length: 100_000 }, (_, i) => ({
      executable: '/bin/echo',
      arguments: ['task', String(i)],
      environment: { A: 'b' },
      ranks: 1,
    }));
    const t0 = process.hrtime.bigint();
    let found = 0;
    for (const d of descs) found += plainDataIssues(d).length;
    // ~30 ms on the 2-core box (less than JSON.stringify of the same): the bound is for a busy one
    expect(found).toBe(0);
    expect(Number(process.hrtime.bigint() - t0) / 1e6).toBeLessThan(1_000);
  });
});
