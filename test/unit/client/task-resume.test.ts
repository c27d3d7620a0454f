import { describe, expect, it } from '@jest/globals';
import { Task } from '../../../src/client/task';
import { planPickUp } from '../../../src/client/task-resume';
import type { TaskState } from '../../../src/states/task-model';

/** A task the replay left in `state`, on pilot.0000 unless `pilot` is null. */
function task(
  uid: string,
  state: TaskState,
  more: { pilot?: null; attempt?: number; exitCode?: number; stdout?: string } = {},
): Task {
  const t = new Task(uid, { executable: '/bin/true' });
  t.state = state;
  const { pilot, ...rest } = more;
  Object.assign(t, rest);
  if (pilot !== null) t.pilot = 'pilot.0000';
  return t;
}

describe('planPickUp', () => {
  it('takes each unfinished task back where the replay says it was', () => {
    const plan = planPickUp(
      [
        task('new', 'NEW', { pilot: null }),
        task('sched', 'TMGR_SCHEDULING'),
        task('sent', 'AGENT_STAGING_INPUT_PENDING'),
        task('running', 'AGENT_EXECUTING', { attempt: 2 }),
        task('back', 'TMGR_STAGING_OUTPUT_PENDING', { exitCode: 0, stdout: 'hi' }),
        task('coming', 'TMGR_STAGING_OUTPUT'), // no exit told yet: the agent's copy is awaited
        task('lost', 'AGENT_SCHEDULING', { pilot: null }),
        task('done', 'DONE'),
      ],
      'sess',
    );
    expect(plan.unsent.map((t) => t.uid)).toEqual(['new', 'sched', 'lost']);
    const p = plan.byPilot.get('pilot.0000')!;
    expect(p.agent).toEqual([
      { uid: 'running', attempt: 2 },
      { uid: 'coming', attempt: 1 },
    ]);
    expect(p.toAgent.map((r) => [r.uid, r.state, r.session])).toEqual([
      ['sent', 'AGENT_STAGING_INPUT_PENDING', 'sess'],
    ]);
    expect(p.output.map((r) => [r.uid, r.state, r.exitCode, r.stdout])).toEqual([
      ['back', 'TMGR_STAGING_OUTPUT_PENDING', 0, 'hi'],
    ]);
    expect([...plan.byPilot.keys()]).toEqual(['pilot.0000']);
  });
});
