import { describe, expect, it } from '@jest/globals';
import { StartDeadlines } from '../../../../src/components/agent-scheduler/start-deadlines';
import type { TaskRecord } from '../../../../src/generated';
import { taskRecord } from '../../../support/core-harness';
import { FakeClock } from '../../../support/fake-clock';

const task = (uid: string, walltimeS?: number): TaskRecord =>
  taskRecord(uid, 'AGENT_SCHEDULING', { description: walltimeS ? { walltimeS } : {} });

describe('StartDeadlines', () => {
  it('hands over each waiting task just after its latest start, earliest first', () => {
    const clock = new FakeClock();
    const due: string[][] = [];
    const d = new StartDeadlines(clock, (ts) => due.push(ts.map((t) => t.uid)));
    d.add(task('before')); // no drain point yet: nothing to watch
    d.setDrainPoint(clock.now() + 100_000);
    const [a, b, c] = [task('a', 90), task('b', 40), task('c')];
    for (const t of [a, b, c]) d.add(t);
    clock.advance(10_000);
    expect(due).toEqual([]);
    clock.advance(1);
    expect(due).toEqual([['a']]);
    clock.advance(50_000);
    expect(due).toEqual([['a'], ['b']]);
  });

  it('forgets tasks that left, and is rebuilt once they outnumber those waiting', () => {
    const clock = new FakeClock();
    const due: string[] = [];
    const d = new StartDeadlines(clock, (ts) => due.push(...ts.map((t) => t.uid)));
    d.setDrainPoint(clock.now() + 10_000_000);
    const all = Array.from({ length: 3_000 }, (_, i) => task(`t${i}`, 1 + (i % 97)));
    for (const t of all) d.add(t);
    for (const t of all) if (!t.uid.endsWith('7')) d.left(t);
    clock.advance(10_000_000);
    const waiting = all.filter((t) => t.uid.endsWith('7'));
    expect(due).toHaveLength(waiting.length);
    expect(new Set(due)).toEqual(new Set(waiting.map((t) => t.uid)));
  });
});
