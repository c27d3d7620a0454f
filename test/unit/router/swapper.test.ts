import { describe, expect, it } from '@jest/globals';
import {
  GroupSwapper,
  LruSwapper,
  MatrixSwapper,
  roomStops,
  type RoomCandidate,
  type RunningModel,
} from '../../../src/router/swapper';

const running = (...names: string[]): RunningModel[] =>
  names.map((name, i) => ({ name, inFlight: 0, lastUsedMs: i }));

describe('LruSwapper', () => {
  it('stops nothing by policy and lets anything be evicted for room', () => {
    const s = new LruSwapper();
    expect(s.stopsFor('a', running('b', 'c'))).toEqual([]);
    expect(s.evictable('b')).toBe(true);
  });
});

describe('GroupSwapper', () => {
  const s = new GroupSwapper([
    { name: 'chat', members: ['a', 'b'] },
    { name: 'side', members: ['c', 'd'], swap: false },
    { name: 'big', members: ['e'], exclusive: true },
    { name: 'keep', members: ['k'], persistent: true },
  ]);

  it('runs one member of a swap group at a time', () => {
    expect(s.stopsFor('a', running('b', 'c'))).toEqual(['b']);
    expect(s.stopsFor('a', running('a', 'c'))).toEqual([]); // a second replica of a
  });

  it('lets the members of a group without swap run together', () => {
    expect(s.stopsFor('c', running('d', 'a'))).toEqual([]);
  });

  it('stops every other group but persistent ones for an exclusive member', () => {
    expect(s.stopsFor('e', running('a', 'c', 'k', 'x'))).toEqual(['a', 'c', 'x']);
    expect(s.evictable('k')).toBe(false);
    expect(s.evictable('a')).toBe(true);
  });

  it('puts no rule on a model in no group', () => {
    expect(s.stopsFor('x', running('a', 'e'))).toEqual([]);
  });
});

describe('MatrixSwapper', () => {
  it('keeps the set that stops least, by cost, then by count, then the first listed', () => {
    const s = new MatrixSwapper([['a', 'b'], ['a', 'c'], ['c']], { b: 5, c: 1 });
    // running a and b, c wanted: {a,c} stops b (5), {c} stops a and b (6)
    expect(s.stopsFor('c', running('a', 'b'))).toEqual(['b']);
    const t = new MatrixSwapper([['a', 'b'], ['a', 'c'], ['c']], { a: 10, b: 1 });
    expect(t.stopsFor('c', running('a', 'b'))).toEqual(['b']); // {a,c}: 1 against 11
    const u = new MatrixSwapper([
      ['x', 'c'],
      ['y', 'c'],
    ]);
    expect(u.stopsFor('c', running('y'))).toEqual([]);
  });

  it('swaps within a matrix of three that cannot run together', () => {
    const s = new MatrixSwapper([['a'], ['b'], ['c']]);
    expect(s.stopsFor('b', running('a'))).toEqual(['a']);
    expect(s.stopsFor('c', running('b'))).toEqual(['b']);
  });
});

describe('roomStops', () => {
  const c = (id: string, gpus: number, lastUsedMs: number, inFlight = 0): RoomCandidate => ({
    id,
    model: id,
    uses: { cores: 1, gpus },
    inFlight,
    lastUsedMs,
  });
  const any = (): boolean => true;

  it('stops nothing when the replica fits', () => {
    expect(roomStops({ cores: 1, gpus: 1 }, { cores: 4, gpus: 1 }, [c('a', 1, 0)], any)).toEqual(
      [],
    );
  });

  it('stops the least recently used idle replicas first, busy ones last', () => {
    const cands = [c('busy', 1, 0, 2), c('new', 1, 9), c('old', 1, 5)];
    expect(roomStops({ cores: 1, gpus: 1 }, { cores: 4, gpus: 0 }, cands, any)).toEqual(['old']);
    expect(roomStops({ cores: 1, gpus: 2 }, { cores: 4, gpus: 0 }, cands, any)).toEqual([
      'old',
      'new',
    ]);
    expect(roomStops({ cores: 1, gpus: 3 }, { cores: 4, gpus: 0 }, cands, any)).toEqual([
      'old',
      'new',
      'busy',
    ]);
  });

  it('stops none that frees nothing needed, none that may not be evicted', () => {
    const cands = [c('cpu', 0, 0), c('keep', 1, 1), c('gpu', 1, 2)];
    const evictable = (m: string): boolean => m !== 'keep';
    expect(roomStops({ cores: 1, gpus: 1 }, { cores: 4, gpus: 0 }, cands, evictable)).toEqual([
      'gpu',
    ]);
    expect(
      roomStops({ cores: 1, gpus: 2 }, { cores: 4, gpus: 0 }, cands, evictable),
    ).toBeUndefined();
  });
});
