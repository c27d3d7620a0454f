import { describe, expect, it } from '@jest/globals';
import { AgentWaits } from '../../../../src/client/pilots/agent-waits';
import type { ControlMessage, WaitReason } from '../../../../src/generated';
import { silentLogger } from '../../../../src/lib/logger';

const REASON: WaitReason = {
  kind: 'resources',
  message: 'waiting for 1 rank(s) x 2 cores, 0 GPUs, 0 MiB on one node',
  component: 'AgentScheduler',
  ts: 1,
};

/** p1 was given t1 (attempt 2: attempt 1 was fenced) and t2; p2 nothing. */
function board(): AgentWaits {
  const given = new Map([
    ['p1/t1', 2],
    ['p1/t2', 1],
  ]);
  return new AgentWaits((p, uid, attempt) => given.get(`${p}/${uid}`) === attempt, silentLogger);
}

function waits(
  pilot: string,
  ...entries: Extract<ControlMessage, { type: 'agent_waits' }>['waits']
) {
  return { type: 'agent_waits' as const, session: 's', pilot, waits: entries };
}

describe('AgentWaits', () => {
  it('keeps the latest reason per shape and drops it when the agent says none waits', () => {
    const b = board();
    b.hear(waits('p1', { shape: 'A', task: 't1', attempt: 2, reason: REASON }));
    expect(b.get('p1', 'A')).toEqual({ task: 't1', attempt: 2, reason: REASON });
    const later = { ...REASON, message: 'changed', ts: 2 };
    b.hear(waits('p1', { shape: 'A', task: 't2', attempt: 1, reason: later }));
    expect(b.get('p1', 'A')?.reason.message).toBe('changed');
    b.hear(waits('p1', { shape: 'A' }));
    expect(b.get('p1', 'A')).toBeUndefined();
    expect(b.refused).toBe(0);
  });

  it('refuses and counts a reason naming an older attempt or a task not given to that pilot', () => {
    const b = board();
    b.hear(waits('p1', { shape: 'A', task: 't1', attempt: 1, reason: REASON }));
    b.hear(waits('p2', { shape: 'A', task: 't1', attempt: 2, reason: REASON }));
    b.hear(waits('p1', { shape: 'B', reason: REASON }));
    expect(b.get('p1', 'A')).toBeUndefined();
    expect(b.get('p2', 'A')).toBeUndefined();
    expect(b.get('p1', 'B')).toBeUndefined();
    expect(b.refused).toBe(3);
  });

  it('forgets what a pilot said once its agent has ended', () => {
    const b = board();
    b.hear(waits('p1', { shape: 'A', task: 't1', attempt: 2, reason: REASON }));
    b.hear({ type: 'agent_final', session: 's', pilot: 'p1', final: 'DONE', message: 'done' });
    expect(b.get('p1', 'A')).toBeUndefined();
  });
});
