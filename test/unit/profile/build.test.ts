import { describe, expect, it } from '@jest/globals';
import type { Notification } from '../../../src/generated';
import { buildProfile, type SessionFacts } from '../../../src/profile/build';

const task = (
  uid: string,
  attempt: number,
  state: string,
  ts: number,
  detail?: Notification['detail'],
): Notification =>
  ({
    kind: 'task',
    uid,
    attempt,
    state,
    ts,
    component: 'x',
    ...(detail !== undefined ? { detail } : {}),
  }) as Notification;

const facts = (): SessionFacts => ({
  tasks: new Map([
    ['t1', { name: 'one', executable: '/bin/true' }],
    ['t2', { mode: 'function', function: { module: 'm' } }],
    ['t3', { executable: '/bin/false' }],
  ]),
  pilots: new Map([['p1', { resource: 'local', nodes: [{ name: 'n0', cores: 4, gpus: 1 }] }]]),
});

describe('buildProfile', () => {
  it('orders states by the model whatever the arrival order, drops repeats, keeps attempts apart', () => {
    const p = buildProfile(
      's',
      [
        task('t1', 1, 'AGENT_EXECUTING', 30, { slots: [{ node: 'n0', cores: [1, 2], gpus: [0] }] }),
        task('t1', 1, 'NEW', 10),
        task('t1', 1, 'FAILED', 50, {
          reason: { code: 'E_EXIT_CODE', message: 'exit 1', component: 'Executor' },
          pilot: 'p1',
        }),
        task('t1', 1, 'NEW', 11),
        task('t1', 2, 'TMGR_SCHEDULING_PENDING', 60),
        task('t1', 1, 'AGENT_STAGING_OUTPUT_PENDING', 40, {
          launched: 31,
          exited: 39,
          exitCode: 1,
        }),
      ],
      facts(),
      100,
    );
    const t1 = p.tasks.find((t) => t.uid === 't1')!;
    expect(t1.name).toBe('one');
    expect(t1.attempts.map((a) => a.attempt)).toEqual([1, 2]);
    const a1 = t1.attempts[0]!;
    expect(a1.states).toEqual([
      { state: 'NEW', ts: 10 },
      { state: 'AGENT_EXECUTING', ts: 30 },
      { state: 'AGENT_STAGING_OUTPUT_PENDING', ts: 40 },
      { state: 'FAILED', ts: 50 },
    ]);
    expect(a1).toMatchObject({
      final: 'FAILED',
      pilot: 'p1',
      launched: 31,
      exited: 39,
      exitCode: 1,
      slots: [{ node: 'n0', cores: [1, 2], gpus: [0] }],
      reason: { code: 'E_EXIT_CODE' },
    });
    expect(t1.attempts[1]!.final).toBeUndefined();
  });

  it('takes the states a notification says were passed quietly, with their real times', () => {
    const p = buildProfile(
      's',
      [
        // [state code, ms before 9]: AGENT_SCHEDULING at 5, AGENT_EXECUTING at 7, AGENT_STAGING_INPUT at 4
        task('t2', 1, 'TMGR_STAGING_OUTPUT_PENDING', 9, { passed: [8, 4, 10, 2, 6, 5] }),
        task('t2', 1, 'AGENT_STAGING_INPUT_PENDING', 3),
      ],
      facts(),
      10,
    );
    const t2 = p.tasks.find((t) => t.uid === 't2')!;
    expect(t2.mode).toBe('function');
    expect(t2.attempts[0]!.states.map((s) => [s.state, s.ts])).toEqual([
      ['AGENT_STAGING_INPUT_PENDING', 3],
      ['AGENT_STAGING_INPUT', 4],
      ['AGENT_SCHEDULING', 5],
      ['AGENT_EXECUTING', 7],
      ['TMGR_STAGING_OUTPUT_PENDING', 9],
    ]);
  });

  it('lists a task the journal has and the store not yet, and pilots with their nodes', () => {
    const p = buildProfile(
      's',
      [
        { kind: 'pilot', uid: 'p1', attempt: 1, state: 'PMGR_ACTIVE', ts: 2, component: 'x' },
        {
          kind: 'pilot',
          uid: 'p1',
          attempt: 1,
          state: 'DONE',
          ts: 9,
          component: 'x',
          detail: { jobStarted: 1, drainStarted: 8 },
        },
      ] as Notification[],
      facts(),
      10,
    );
    expect(p.tasks.find((t) => t.uid === 't3')).toEqual({
      uid: 't3',
      mode: 'executable',
      attempts: [],
    });
    expect(p.pilots).toEqual([
      {
        uid: 'p1',
        resource: 'local',
        nodes: [{ name: 'n0', cores: 4, gpus: 1 }],
        states: [
          { state: 'PMGR_ACTIVE', ts: 2 },
          { state: 'DONE', ts: 9 },
        ],
        final: 'DONE',
        jobStarted: 1,
        drainStarted: 8,
      },
    ]);
  });
});
