import { describe, expect, it } from '@jest/globals';
import type { Notification, TaskRecord } from '../../../src/generated';
import { silentLogger } from '../../../src/lib/logger';
import { consumeLocalTasks } from '../../../src/components/shared/shell';
import { CoalescingSender } from '../../../src/transport/coalescing-sender';
import { LocalQueue } from '../../../src/transport/local-queue';

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('LocalQueue', () => {
  it('hands everything sent in one turn to the consumer as one bulk, by reference, in order', async () => {
    const q = new LocalQueue<{ n: number }>();
    const got: { n: number }[][] = [];
    q.consume((items) => got.push(items));
    const a = { n: 1 };
    void q.send([a]);
    void q.send([{ n: 2 }, { n: 3 }]);
    expect(got).toEqual([]); // not re-entrant: delivery comes after the sender's turn
    await turn();
    expect(got).toEqual([[{ n: 1 }, { n: 2 }, { n: 3 }]]);
    expect(got[0]![0]).toBe(a);
  });

  it('keeps what was sent before a consumer attached, and drops what is pending at close', async () => {
    const q = new LocalQueue<number>();
    void q.send([1, 2]);
    const got: number[][] = [];
    q.consume((items) => got.push(items));
    await turn();
    expect(got).toEqual([[1, 2]]);
    void q.send([3]);
    expect(q.close()).toBe(1);
    void q.send([4]);
    await turn();
    expect(got).toEqual([[1, 2]]);
  });
});

describe('consumeLocalTasks', () => {
  it('passes tasks in the arrival state and fails the others with the reason, naming the component', async () => {
    const q = new LocalQueue<TaskRecord>();
    const handled: string[] = [];
    const notes: Notification[] = [];
    consumeLocalTasks(
      q,
      {
        component: 'Executor',
        arrives: 'AGENT_EXECUTING_PENDING',
        handle: (ts) => handled.push(...ts.map((t) => t.uid)),
        notify: (ns) => notes.push(...ns),
        now: () => 42,
      },
      silentLogger,
    );
    const base = { attempt: 1, session: 's', description: { executable: '/bin/true' } };
    void q.send([
      { ...base, uid: 't1', state: 'AGENT_EXECUTING_PENDING' },
      { ...base, uid: 't2', state: 'AGENT_SCHEDULING' },
    ]);
    await turn();
    expect(handled).toEqual(['t1']);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatchObject({ uid: 't2', state: 'FAILED', component: 'Executor', ts: 42 });
    expect(notes[0]!.detail?.reason?.message).toMatch(
      /must be AGENT_EXECUTING_PENDING here, not AGENT_SCHEDULING/,
    );
  });
});

describe('CoalescingSender', () => {
  it('sends what was gathered in one turn as one message; flush sends at once', async () => {
    const sent: unknown[] = [];
    const c = new CoalescingSender<number>(
      { send: (v: unknown) => (sent.push(v), Promise.resolve()) },
      () => undefined,
    );
    c.send([1]);
    c.send([2, 3]);
    c.send([]);
    expect(sent).toEqual([]);
    await turn();
    expect(sent).toEqual([[1, 2, 3]]);
    c.send([4]);
    c.flush();
    expect(sent).toEqual([[1, 2, 3], [4]]);
    await turn();
    expect(sent).toHaveLength(2);
  });
});
