import { describe, expect, it } from '@jest/globals';
import type { Notification } from '../../../../src/generated';
import { StoreError } from '../../../../src/updater/state-store';
import { StoreKeys } from '../../../../src/updater/embedded/store-keys';
import { MAX_POSITION } from '../../../../src/updater/embedded/uid-index';

function note(
  uid: string,
  state: Notification['state'],
  attempt = 1,
  kind: Notification['kind'] = 'task',
): Notification {
  return { kind, uid, attempt, state, ts: 1_700_000_000_000, component: 'test' };
}

describe('StoreKeys', () => {
  it('claims each key once, counting per batch what was new, within a group too', () => {
    const keys = new StoreKeys();
    const a = note('t.a', 'NEW');
    const group = [{ batch: [a, note('t.b', 'NEW')] }, { batch: [a, note('t.a', 'DONE')] }];
    const c = keys.claimAll(group, 0);
    expect(c.counts).toEqual([2, 1]);
    expect(c.fresh.map((n) => `${n.uid} ${n.state}`)).toEqual(['t.a NEW', 't.b NEW', 't.a DONE']);
    expect(c.states).toEqual([0, 0, 1]);
    expect(keys.stateNames).toEqual(['NEW', 'DONE']);
    expect(keys.positionsOf('t.a')).toEqual([0, 2]);
    // the same again, later: nothing new
    expect(keys.claimAll(group, 3).counts).toEqual([0, 0]);
  });

  it('forgets the claims of a group whose write failed, so that it can be claimed again', () => {
    const keys = new StoreKeys();
    keys.claimAll([{ batch: [note('t.a', 'NEW')] }], 0);
    const { fresh } = keys.claimAll([{ batch: [note('t.a', 'DONE'), note('t.b', 'NEW')] }], 1);
    keys.unclaimAll(fresh);
    expect(keys.positionsOf('t.a')).toEqual([0]);
    expect(keys.positionsOf('t.b')).toEqual([]);
    expect(keys.claimAll([{ batch: [note('t.b', 'NEW')] }], 1).counts).toEqual([1]);
  });

  it('keeps nothing of a group that would pass the last position', () => {
    const keys = new StoreKeys();
    const group = [{ batch: [note('t.a', 'NEW'), note('t.b', 'NEW')] }];
    expect(() => keys.claimAll(group, MAX_POSITION)).toThrow(StoreError);
    expect(keys.positionsOf('t.a')).toEqual([]);
    expect(keys.claimAll(group, 0).counts).toEqual([2]);
  });

  it('tells apart keys too large to pack (attempt 2^18 and more) and kinds', () => {
    const keys = new StoreKeys();
    const batch = [
      note('t.a', 'NEW', 2 ** 18),
      note('t.a', 'NEW', 2 ** 18 + 1),
      note('t.a', 'NEW', 2 ** 18, 'pilot'),
      note('t.a', 'NEW', 1),
    ];
    expect(keys.claimAll([{ batch }], 0).counts).toEqual([4]);
    expect(keys.claimAll([{ batch }], 4).counts).toEqual([0]);
  });
});
