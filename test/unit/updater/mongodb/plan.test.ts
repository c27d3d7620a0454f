import { describe, expect, it } from '@jest/globals';
import * as driver from 'mongodb';
import type { Notification } from '../../../../src/generated';
import { StoreError } from '../../../../src/updater/state-store';
import {
  backoffMs,
  classifyWriteErrors,
  contiguousRun,
  fromDoc,
  isReplicaSet,
  isUnreachableError,
  KEY_INDEX,
  SEQ_INDEX,
  toDoc,
  uniqueByKey,
  writeErrorsOf,
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

/** An error as the driver throws it: its class told by its name (plan.ts has no driver). */
function named(name: string, message: string, more: object = {}, cause?: unknown): Error {
  const e = new Error(message, cause !== undefined ? { cause } : undefined);
  e.name = name;
  return Object.assign(e, more);
}

describe('isUnreachableError', () => {
  const unreachable = [
    'MongoServerSelectionError',
    'MongoNetworkError',
    'MongoNetworkTimeoutError',
    'MongoPoolClearedError',
    'MongoTopologyClosedError',
  ];

  it('knows the driver errors that mean no server answers, by name', () => {
    for (const name of unreachable) {
      expect([name, isUnreachableError(named(name, 'connect ECONNREFUSED 127.0.0.1:1'))]).toEqual([
        name,
        true,
      ]);
    }
  });

  it('matches the names the driver gives its error classes', () => {
    // a rename in a driver upgrade would make every outage look like a server's refusal
    const exported = driver as unknown as Record<string, { prototype: Error } | undefined>;
    for (const name of unreachable.filter((n) => n !== 'MongoPoolClearedError')) {
      expect(exported[name]?.prototype.name).toBe(name);
    }
  });

  it('looks through cause chains', () => {
    const network = named('MongoNetworkError', 'connect ECONNREFUSED 127.0.0.1:1');
    expect(isUnreachableError(new StoreError('append failed', { cause: network }))).toBe(true);
    const deep = new Error('outer', { cause: new Error('middle', { cause: network }) });
    expect(isUnreachableError(deep)).toBe(true);
    expect(isUnreachableError(new Error('outer', { cause: new Error('inner') }))).toBe(false);
  });

  it('counts a failed DNS lookup of an SRV URI (the driver passes it on unwrapped)', () => {
    const dns = (syscall: string): Error =>
      named('Error', `${syscall} ENOTFOUND _mongodb._tcp.c.invalid`, {
        code: 'ENOTFOUND',
        syscall,
      });
    expect(isUnreachableError(dns('querySrv'))).toBe(true);
    expect(isUnreachableError(dns('queryTxt'))).toBe(true);
    expect(isUnreachableError(dns('open'))).toBe(false);
  });

  it('does not count a server that answered with an error', () => {
    const duplicate = named('MongoServerError', 'E11000 duplicate key error collection', {
      code: 11000,
    });
    const auth = named('MongoServerError', 'Authentication failed.', {
      code: 18,
      codeName: 'AuthenticationFailed',
    });
    const bulk = named('MongoBulkWriteError', 'E11000 duplicate key error', { code: 11000 });
    for (const e of [duplicate, auth, bulk, new StoreError('refused', { cause: auth })]) {
      expect([e.message, isUnreachableError(e)]).toEqual([e.message, false]);
    }
    expect(driver.MongoServerError.prototype.name).toBe('MongoServerError');
  });

  it('is false for what is not an Error, and ends on a cause chain that loops', () => {
    for (const v of [undefined, null, 'MongoNetworkError', { name: 'MongoNetworkError' }]) {
      expect(isUnreachableError(v)).toBe(false);
    }
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    a.cause = b;
    expect(isUnreachableError(a)).toBe(false);
    a.cause = named('MongoNetworkError', 'gone', {}, b);
    expect(isUnreachableError(b)).toBe(true);
  });
});

/**
 * The driver's own error objects, built as its bulk write builds them (its internal module:
 * the classes are not all exported), so that a change of their shape in a new driver fails here.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const bulk = require('mongodb/lib/bulk/common') as {
  BulkWriteResult: new (result: Record<string, unknown>, ordered: boolean) => unknown;
  WriteError: new (err: Record<string, unknown>) => unknown;
};
const emptyResult = (): unknown =>
  new bulk.BulkWriteResult(
    {
      writeErrors: [],
      writeConcernErrors: [],
      insertedIds: [],
      nInserted: 0,
      nUpserted: 0,
      nMatched: 0,
      nModified: 0,
      nRemoved: 0,
      upserted: [],
    },
    false,
  );
const lostServer = (): Error =>
  new driver.MongoServerSelectionError('connect ECONNREFUSED 127.0.0.1:1', {
    type: 'Unknown',
  } as unknown as driver.TopologyDescription);

describe('a failed insertMany, as the driver reports it', () => {
  it('gives the write errors of a duplicate key, to be counted as already there', () => {
    const dup = new bulk.WriteError({
      index: 1,
      code: 11000,
      errmsg: `E11000 duplicate key error collection: pilotfish.notifications index: ${KEY_INDEX} dup key`,
      keyPattern: { session: 1, kind: 1, uid: 1, attempt: 1, state: 1 },
    });
    const e = new driver.MongoBulkWriteError(
      { message: 'dup', code: 11000, writeErrors: [dup] } as never,
      emptyResult() as never,
    );
    const errors = writeErrorsOf(e);
    expect(errors).toEqual([
      expect.objectContaining({ index: 1, code: 11000, keyPattern: expect.any(Object) }),
    ]);
    expect(classifyWriteErrors(errors!).duplicate).toEqual([1]);
    expect(isUnreachableError(e)).toBe(false);
  });

  it('is a whole failure when the connection was lost: nothing counted written, and unreachable', () => {
    // the driver wraps the lost connection in a bulk error that lists no write error
    const e = new driver.MongoBulkWriteError(lostServer(), emptyResult() as never);
    expect(e.name).toBe('MongoBulkWriteError');
    expect(writeErrorsOf(e)).toBeUndefined();
    expect(isUnreachableError(e)).toBe(true);
  });

  it('is a whole failure on any other error', () => {
    expect(writeErrorsOf(new Error('x'))).toBeUndefined();
    expect(writeErrorsOf(lostServer())).toBeUndefined();
  });
});
