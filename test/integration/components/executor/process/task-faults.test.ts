/**
 * Every fault that ends a task ends what it started: a session with a local pilot runs a task
 * that leaves four processes behind, each ignoring SIGTERM (in its group, under nohup, in a
 * session of its own, double-forked into one: fixtures/leave-behind.sh); on cancel, on timeout,
 * when the task itself ends (DONE) and when the pilot ends with the session, the task reaches a
 * final state with its reason and none of the four is left (on timeout also when a preExec line
 * left them). Run with each helper and tracking this machine offers (the agent takes both from
 * the variables it inherits).
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { SpawnerHelper } from '../../../../../src/components/executor/process/spawner-pool';
import type { TrackingKind } from '../../../../../src/components/executor/process/helper/protocol';
import {
  SPAWNER_ENV,
  TRACKING_ENV,
} from '../../../../../src/components/executor/process/spawner-pool';
import { fixtures, openFixture } from '../../../../support/session-fixture';
import {
  LEAVE_BEHIND,
  allGone,
  describeEachTracking,
  killAll,
  leftPids,
} from './tracking-fixtures';

/** The agent's kill grace: between SIGTERM and SIGKILL, on a cancel, a timeout, a task's end. */
const GRACE_MS = 500;
/** How long a process may take to go: the grace, and room for a busy machine. */
const GONE_MS = 10_000;

/** Sets an environment variable for the describe block (the agents inherit it). */
function useEnv(name: string, value: string): void {
  const saved = process.env[name];
  beforeAll(() => {
    process.env[name] = value;
  });
  afterAll(() => {
    if (saved === undefined) delete process.env[name];
    else process.env[name] = saved;
  });
}

describeEachTracking(
  'a fault ends what the task started',
  (helper: SpawnerHelper, tracking: TrackingKind) => {
    useEnv(SPAWNER_ENV, helper);
    useEnv(TRACKING_ENV, tracking);
    const fixture = fixtures();
    const pilot = { cores: 1, agent: { killGraceMs: GRACE_MS } };
    const leaving = (mode: 'exit' | 'run', timeoutS?: number) => ({
      executable: '/bin/sh',
      arguments: [LEAVE_BEHIND, mode],
      ...(timeoutS === undefined ? {} : { timeoutS }),
    });

    it('cancel: CANCELED, and nothing left', async () => {
      const fx = await fixture.open(pilot);
      const [t] = await fx.tmgr.submitTasks([leaving('run')]);
      await fx.tmgr.waitTasks({ states: ['AGENT_EXECUTING'], timeoutMs: 15_000 });
      const pids = await leftPids(t!.sandbox!);
      try {
        await fx.tmgr.cancelTasks([t!.uid]);
        await fx.tmgr.waitTasks({ timeoutMs: 15_000 });
        expect([t!.state, t!.reason?.code]).toEqual(['CANCELED', 'E_CANCELED']);
        await allGone(pids, GONE_MS);
      } finally {
        killAll(pids);
      }
    }, 40_000);

    it('timeout: FAILED with E_TASK_TIMEOUT, and nothing left', async () => {
      const fx = await fixture.open(pilot);
      const [t] = await fx.tmgr.submitTasks([leaving('run', 3)]);
      await fx.tmgr.waitTasks({ states: ['AGENT_EXECUTING'], timeoutMs: 15_000 });
      const pids = await leftPids(t!.sandbox!);
      try {
        await fx.tmgr.waitTasks({ timeoutMs: 15_000 });
        expect([t!.state, t!.reason?.code]).toEqual(['FAILED', 'E_TASK_TIMEOUT']);
        await allGone(pids, GONE_MS);
      } finally {
        killAll(pids);
      }
    }, 40_000);

    it('timeout in a preExec line: FAILED with E_TASK_TIMEOUT, and nothing left', async () => {
      const fx = await fixture.open(pilot);
      const [t] = await fx.tmgr.submitTasks([
        { executable: '/bin/true', preExec: [`/bin/sh ${LEAVE_BEHIND} run`], timeoutS: 3 },
      ]);
      await fx.tmgr.waitTasks({ states: ['AGENT_EXECUTING'], timeoutMs: 15_000 });
      const pids = await leftPids(t!.sandbox!);
      try {
        await fx.tmgr.waitTasks({ timeoutMs: 15_000 });
        expect([t!.state, t!.reason?.code]).toEqual(['FAILED', 'E_TASK_TIMEOUT']);
        await allGone(pids, GONE_MS);
      } finally {
        killAll(pids);
      }
    }, 40_000);

    it('the task ends: DONE, and what it left is ended after the grace', async () => {
      const fx = await fixture.open(pilot);
      const [t] = await fx.tmgr.submitTasks([leaving('exit')]);
      await fx.tmgr.waitTasks({ timeoutMs: 15_000 });
      const pids = await leftPids(t!.sandbox!);
      try {
        expect([t!.state, t!.exitCode]).toEqual(['DONE', 0]);
        await allGone(pids, GONE_MS);
      } finally {
        killAll(pids);
      }
    }, 40_000);

    it('the pilot ends with the session: a final state with its reason, and nothing left', async () => {
      const fx = await openFixture(pilot);
      let pids: number[] = [];
      try {
        const [t] = await fx.tmgr.submitTasks([leaving('run')]);
        await fx.tmgr.waitTasks({ states: ['AGENT_EXECUTING'], timeoutMs: 15_000 });
        pids = await leftPids(t!.sandbox!);
        await fx.session.close();
        expect(t!.final).toBe(true);
        expect([t!.state, t!.reason?.code]).toEqual(['CANCELED', 'E_CANCELED']);
        await allGone(pids, GONE_MS);
      } finally {
        killAll(pids);
        await fx.close();
      }
    }, 40_000);
  },
);
