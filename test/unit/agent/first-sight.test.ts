import { describe, expect, it } from '@jest/globals';
import { FirstSight } from '../../../src/agent/first-sight';
import type { TaskRecord } from '../../../src/generated';
import { silentLogger } from '../../../src/lib/logger';

const rec = (uid: string, attempt: number): TaskRecord => ({
  uid,
  attempt,
  state: 'AGENT_STAGING_INPUT_PENDING',
  session: 's',
  description: { executable: '/bin/true' },
});
const uids = (ts: TaskRecord[]): string[] => ts.map((t) => `${t.uid}#${t.attempt}`);

describe('FirstSight', () => {
  it('passes each attempt of a task once, and no attempt older than one it passed', () => {
    const seen = new FirstSight();
    expect(uids(seen.filter([rec('a', 1), rec('b', 1)], silentLogger))).toEqual(['a#1', 'b#1']);
    // a resumed client sends again what it cannot tell arrived, with a task that is new
    expect(uids(seen.filter([rec('a', 1), rec('c', 1)], silentLogger))).toEqual(['c#1']);
    // a retry on the same pilot is a new attempt; the old one sent late is stale
    expect(uids(seen.filter([rec('b', 2)], silentLogger))).toEqual(['b#2']);
    expect(uids(seen.filter([rec('b', 1), rec('b', 2)], silentLogger))).toEqual([]);
    // the same task twice in one bulk runs once
    expect(uids(seen.filter([rec('d', 1), rec('d', 1)], silentLogger))).toEqual(['d#1']);
  });
});
