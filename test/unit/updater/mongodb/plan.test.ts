import { describe, expect, it } from '@jest/globals';
import type { Notification } from '../../../../src/generated';
import {
  backoffMs,
  classifyWriteErrors,
  contiguousRun,
  fromDoc,
  isReplicaSet,
  KEY_INDEX,
  SEQ_INDEX,
  toDoc,
  uniqueByKey,
  type SlotDoc,
} from '../../../../src/updater/mongodb/plan';

const note = (uid: string, state: Notification['state'], ts = 1): Notification => ({
  kind: 'task',
  uid,
  attempt: 1,
  state,
  ts,
  component: 'test',
});
const gap = (seq: number): SlotDoc => ({ session: 's', seq, gap: true });
const doc = (seq: number, uid = `t${seq}`): SlotDoc => toDoc('s', seq, note(uid, 'NEW'));

describe('mongodb-plan', () => {
  it('keeps the first of each key inside a batch, in the order given', () => {
    const a = note('a', 'DONE');
    const b = note('a', 'NEW');
    expect(uniqueByKey([a, b, { ...a, ts: 9 }, b])).toEqual([a, b]);
    expect(uniqueByKey([])).toEqual([]);
  });

  it('round-trips a notification through a document, detail included', () => {
    const n: Notification = {
      ...note('a', 'FAILED'),
      detail: { exitCode: null, reason: { code: 'E_EXIT_CODE', message: 'm', component: 'c' } },
    };
    const d = toDoc('sess', 7, n);
    expect(d).toMatchObject({ session: 'sess', seq: 7 });
    expect(fromDoc({ ...d, _id: 'x' })).toEqual(n);
    expect('detail' in toDoc('s', 1, note('a', 'NEW'))).toBe(false);
  });

  it('classifies duplicate keys as already there and seq collisions as retries', () => {
    const classes = classifyWriteErrors([
      { index: 0, code: 11000, errmsg: `E11000 duplicate key error index: ${KEY_INDEX} dup key` },
      { index: 1, code: 11000, errmsg: `E11000 duplicate key error index: ${SEQ_INDEX} dup key` },
      { index: 2, code: 11000, keyPattern: { session: 1, seq: 1 } },
      { index: 3, code: 11000, keyPattern: { session: 1, kind: 1, uid: 1 } },
      { index: 4, code: 11000, errmsg: 'E11000 duplicate key error index: _id_ dup key' },
      { index: 5, code: 121, errmsg: 'Document failed validation' },
    ]);
    expect(classes.duplicate).toEqual([0, 3]);
    expect(classes.slotTaken).toEqual([1, 2]);
    expect(classes.other.map((e) => e.index)).toEqual([4, 5]);
  });

  it('reads the run without a missing slot and skips gap markers', () => {
    const run = contiguousRun(3, [doc(3), gap(4), doc(5), doc(7), doc(8)]);
    expect(run.notifications.map((d) => d.seq)).toEqual([3, 5]);
    expect(run).toMatchObject({ nextSeq: 6, hole: 6 });
  });

  it('reads everything when no slot is missing, and nothing past a hole at the start', () => {
    expect(contiguousRun(1, [doc(1), doc(2)])).toMatchObject({ nextSeq: 3, hole: undefined });
    expect(contiguousRun(1, [])).toEqual({ notifications: [], nextSeq: 1, hole: undefined });
    expect(contiguousRun(1, [doc(2)])).toEqual({ notifications: [], nextSeq: 1, hole: 1 });
    // Documents below nextSeq (a re-read) are ignored, not delivered twice.
    expect(contiguousRun(2, [doc(1), doc(2)]).notifications.map((d) => d.seq)).toEqual([2]);
  });

  it('backs off exponentially up to the cap', () => {
    expect([0, 1, 2, 3, 5, 6, 20].map((a) => backoffMs(a))).toEqual([
      100, 200, 400, 800, 3_200, 5_000, 5_000,
    ]);
    expect(backoffMs(-1)).toBe(100);
  });

  it('tells a replica set member by its setName', () => {
    expect(isReplicaSet({ isWritablePrimary: true, setName: 'rs0' })).toBe(true);
    expect(isReplicaSet({ isWritablePrimary: true })).toBe(false);
    expect(isReplicaSet({ setName: '' })).toBe(false);
  });
});
