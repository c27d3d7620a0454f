import { describe, expect, it } from '@jest/globals';
import {
  RunningEnds,
  type Allocation,
} from '../../../../src/components/agent-scheduler/running-ends';
import { requestOf, type Request } from '../../../../src/components/agent-scheduler/request';

const req = requestOf({ executable: '/bin/true' }) as Request;
const alloc = (endsAt?: number): Allocation => ({ req, holds: [], endsAt });

describe('RunningEnds', () => {
  it('reads running tasks earliest end first, skipping ended, handed-on and unknown ones', () => {
    const ends = new RunningEnds();
    const [a, b, c, d, e] = [alloc(30), alloc(10), alloc(20), alloc(5), alloc()];
    for (const x of [a, b, c, d, e]) ends.started(x);
    ends.ended(c);
    d.handedOn = true;
    expect([...ends.inOrder()]).toEqual([b, a]);
    // reading takes nothing out
    expect([...ends.inOrder()]).toEqual([b, a]);
  });

  it('is rebuilt once ended entries outnumber running ones, and reads the same', () => {
    const ends = new RunningEnds();
    const all = Array.from({ length: 3_000 }, (_, i) => alloc((i * 7_919) % 3_001));
    for (const x of all) ends.started(x);
    const kept = all.filter((_, i) => i % 5 === 0);
    for (const x of all) if (!kept.includes(x)) ends.ended(x);
    const sorted = [...kept].sort((x, y) => x.endsAt! - y.endsAt!);
    expect([...ends.inOrder()]).toEqual(sorted);
    ends.ended(sorted[0]!);
    expect([...ends.inOrder()]).toEqual(sorted.slice(1));
  });
});
