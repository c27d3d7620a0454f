import { describe, expect, it } from '@jest/globals';
import { ReadyQueue } from '../../../../src/components/manager-scheduler/ready-queue';
import type { TaskRecord } from '../../../../src/generated';
import { taskRecord } from '../../../support/core-harness';

const task = (uid: string, seq: number, priority?: number): TaskRecord =>
  taskRecord(uid, 'TMGR_SCHEDULING', {
    seq,
    description: priority === undefined ? {} : { priority },
  });

/** Every queued uid in order, leaving the queue as it was. */
const order = (q: ReadyQueue): string[] => {
  const uids: string[] = [];
  q.visit((t) => (uids.push(t.uid), 'keep'));
  return uids;
};

describe('ReadyQueue', () => {
  it('orders by priority, then submission order, wherever a task is added', () => {
    const q = new ReadyQueue();
    q.add(task('a', 0));
    q.add(task('c', 2));
    q.add(task('hi', 5, 10));
    q.add(task('b', 1)); // back to its place (a retry)
    expect(order(q)).toEqual(['hi', 'a', 'b', 'c']);
    expect(q.size).toBe(4);
  });

  it('finds and takes tasks by uid, before and after the walk took others', () => {
    const q = new ReadyQueue();
    for (let i = 0; i < 5; i++) q.add(task(`t${i}`, i), 100 + i);
    q.visit((t) => (t.uid === 't1' ? 'take' : 'keep'));
    expect(q.size).toBe(4);
    expect(q.get('t1')).toBeUndefined();
    expect(q.get('t3')?.task.uid).toBe('t3');
    expect(q.get('t3')?.since).toBe(103);
    expect(q.take('t3')?.uid).toBe('t3');
    expect(q.take('t3')).toBeUndefined();
    // once asked, later adds and takes are found too
    q.add(task('t5', 5), 105);
    expect(q.get('t5')?.since).toBe(105);
    q.visit((t) => (t.uid === 't5' ? 'take' : 'keep'));
    expect(q.get('t5')).toBeUndefined();
    expect(order(q)).toEqual(['t0', 't2', 't4']);
    expect(q.size).toBe(3);
  });

  it('takes every task out in order, and stops a walk where told', () => {
    const q = new ReadyQueue();
    for (let i = 0; i < 4; i++) q.add(task(`t${i}`, i));
    const seen: string[] = [];
    q.visit((t) => {
      seen.push(t.uid);
      return t.uid === 't1' ? 'stop' : 'take';
    });
    expect(seen).toEqual(['t0', 't1']);
    expect(q.takeAll().map((t) => t.uid)).toEqual(['t1', 't2', 't3']);
    expect(q.size).toBe(0);
    expect(q.take('t2')).toBeUndefined();
  });

  it('takes the task the walk is on when the walk queued one before it', () => {
    const q = new ReadyQueue();
    q.add(task('a', 0));
    q.add(task('c', 2));
    q.add(task('e', 4));
    const seen: string[] = [];
    q.visit((t) => {
      seen.push(t.uid);
      if (t.uid === 'c') q.add(task('b', 1)); // a dependent let go while 'c' is placed
      return t.uid === 'a' ? 'keep' : 'take';
    });
    expect(seen).toEqual(['a', 'c', 'e']);
    expect(order(q)).toEqual(['a', 'b']);
    expect(q.take('b')?.uid).toBe('b');
    expect(q.size).toBe(1);
  });

  it('keeps tasks without a seq after the others, each found by uid', () => {
    const q = new ReadyQueue();
    q.add(taskRecord('x', 'TMGR_SCHEDULING'), 1);
    q.add(taskRecord('y', 'TMGR_SCHEDULING'), 2);
    q.add(task('s', 7), 3);
    expect(order(q)).toEqual(['s', 'x', 'y']);
    expect(q.get('y')?.since).toBe(2);
    expect(q.take('x')?.uid).toBe('x');
    expect(order(q)).toEqual(['s', 'y']);
  });
});
