import { describe, expect, it } from '@jest/globals';
import { Task } from '../../../../src/client/task';
import {
  handBackOf,
  keepHandBack,
  keepLateFacts,
  keepPlace,
  planPickUp,
} from '../../../../src/client/resume/task-pick-up';
import { recordOf } from '../../../../src/client/pipeline/task-record';
import { Interner } from '../../../../src/lib/strings';
import type { Notification, Reason } from '../../../../src/generated';
import type { TaskState } from '../../../../src/states/task-model';

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
        task('nopilot', 'TMGR_STAGING_OUTPUT_PENDING', { pilot: null, exitCode: 1 }),
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
    expect(plan.output.map((r) => [r.uid, r.state, r.exitCode, r.stdout])).toEqual([
      ['back', 'TMGR_STAGING_OUTPUT_PENDING', 0, 'hi'],
      // its pilot unknown (the dead client's notification naming it was lost): staged out all the same
      ['nopilot', 'TMGR_STAGING_OUTPUT_PENDING', 1, undefined],
    ]);
    expect([...plan.byPilot.keys()]).toEqual(['pilot.0000']);
    // every unfinished task not staged out now: its hand-back may have gone to the dead client
    expect(plan.awaiting).toEqual([
      { uid: 'new', attempt: 1 },
      { uid: 'sched', attempt: 1 },
      { uid: 'sent', attempt: 1 },
      { uid: 'running', attempt: 2 },
      { uid: 'coming', attempt: 1 },
      { uid: 'lost', attempt: 1 },
    ]);
  });
});

const TIMEOUT: Reason = { code: 'E_TASK_TIMEOUT', message: 'too long', component: 'Executor' };

function note(state: TaskState, detail?: Notification['detail']): Notification {
  const n: Notification = { kind: 'task', uid: 't', attempt: 1, state, ts: 5, component: 'X' };
  if (detail !== undefined) n.detail = detail;
  return n;
}

describe('hand-backs', () => {
  it('are the TMGR_STAGING_OUTPUT_PENDING notifications that tell the exit', () => {
    const told = { exitCode: null, signal: 'SIGTERM', stdout: '', stderr: 'e', reason: TIMEOUT };
    expect(handBackOf(note('TMGR_STAGING_OUTPUT_PENDING', told))).toBe(told);
    expect(handBackOf(note('TMGR_STAGING_OUTPUT_PENDING', { stdout: 'x' }))).toBeUndefined();
    expect(handBackOf(note('TMGR_STAGING_OUTPUT_PENDING'))).toBeUndefined();
    expect(handBackOf(note('DONE', { exitCode: 0 }))).toBeUndefined();
  });

  it('are kept on the task and staged out from it, with the reason its executor gave', () => {
    const t = task('t', 'TMGR_STAGING_OUTPUT');
    keepHandBack(t, {
      exitCode: null,
      signal: 'SIGTERM',
      stdout: 'o',
      stderr: 'e',
      reason: TIMEOUT,
    });
    expect(recordOf(t, 'TMGR_STAGING_OUTPUT_PENDING', 'sess')).toEqual({
      uid: 't',
      attempt: 1,
      state: 'TMGR_STAGING_OUTPUT_PENDING',
      session: 'sess',
      description: { executable: '/bin/true' },
      seq: 0,
      retried: 0,
      pilot: 'pilot.0000',
      exitCode: null,
      signal: 'SIGTERM',
      stdout: 'o',
      stderr: 'e',
      reason: TIMEOUT,
    });
    // a task sent to its agent again carries no reason
    expect(recordOf(t, 'AGENT_STAGING_INPUT_PENDING', 'sess').reason).toBeUndefined();
    const planned = planPickUp([t], 'sess');
    expect(planned.output.map((r) => r.reason)).toEqual([TIMEOUT]);
    expect(planned.awaiting).toEqual([]);
  });
});

describe('keepLateFacts', () => {
  it("takes an attempt's retries used, pilot and sandbox from a notification that came late", () => {
    const t = task('x', 'AGENT_STAGING_INPUT', { pilot: null, attempt: 2 });
    const dirs = new Interner();
    keepLateFacts(
      t,
      {
        retried: 1,
        reason: { code: 'E_EXIT_CODE', message: 'exit 3', component: 'ManagerOutputStager' },
      },
      (p) => p,
      dirs,
    );
    keepLateFacts(t, { pilot: 'pilot.0001', sandbox: '/s/pilot.0001/x' }, (p) => p, dirs);
    expect([t.retried, t.pilot, t.sandbox, t.reason]).toEqual([
      1,
      'pilot.0001',
      '/s/pilot.0001/x',
      undefined, // why the last attempt ended is not this one's reason
    ]);
    // what the task already knows of this attempt stays; the retries used never go down
    keepLateFacts(t, { retried: 0, pilot: 'pilot.0002', sandbox: '/elsewhere/x' }, (p) => p, dirs);
    expect([t.retried, t.pilot, t.sandbox]).toEqual([1, 'pilot.0001', '/s/pilot.0001/x']);
  });

  it('names the node from the final state, which may come before the note of the slots', () => {
    const t = task('x', 'DONE');
    const dirs = new Interner();
    keepPlace(t, { pilot: 'pilot.0000', node: 'n7' }, (p) => p, dirs);
    expect(t.node).toBe('n7');
    // the start's note, late: its slots name the same node, and a known node stays
    keepLateFacts(t, { slots: [{ node: 'n7', cores: [0], gpus: [] }] }, (p) => p, dirs);
    expect(t.node).toBe('n7');
    const u = task('y', 'DONE');
    keepLateFacts(u, { node: 'n8' }, (p) => p, dirs);
    expect(u.node).toBe('n8');
  });
});
