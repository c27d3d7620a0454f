import { describe, expect, it } from '@jest/globals';
import type { TaskState } from '../../../src/states/task-model';
import { agentTrace } from '../../support/client-child';
import { pidWritten } from '../../support/pid-file';
import { waitForExit } from '../../support/processes';
import { fixtures } from '../../support/session-fixture';

/** A pilot lost under its tasks: they finish on the pilots that are left. */
describe('a pilot whose agent is killed (SIGKILL)', () => {
  const fixture = fixtures();

  it('ends FAILED; its running task is retried and its waiting ones run on the second pilot', async () => {
    const fx = await fixture.open({ cores: 1 });
    const [second] = await fx.pmgr.submitPilots([{ resource: 'local', cores: 1, runtimeMin: 5 }]);
    const states = new Map<string, string[]>();
    fx.tmgr.onState((t, s, info) => {
      states.set(t.uid, [...(states.get(t.uid) ?? []), `${info.attempt}:${s}`]);
    });
    const [running, ...waiting] = await fx.tmgr.submitTasks([
      {
        uid: 'running',
        retries: 1,
        executable: '/bin/sh',
        // the first attempt runs until its pilot is lost; the next one ends at once
        arguments: ['-c', 'echo $$ > pid; [ "$PF_TASK_ATTEMPT" = 1 ] && exec sleep 60; true'],
      },
      ...['w1', 'w2', 'w3'].map((uid) => ({ uid, executable: '/bin/true' })),
    ]);
    await fx.tmgr.waitTasks({ uids: ['running'], states: ['AGENT_EXECUTING'], timeoutMs: 15_000 });
    const taskPid = await pidWritten(running!.sandbox!);
    // the 1-core pilot holds the others too: they wait behind the running one at its agent
    const uids = waiting.map((t) => t.uid);
    await fx.tmgr.waitTasks({ uids, states: ['AGENT_SCHEDULING'], timeoutMs: 15_000 });
    for (const t of waiting) expect(t.pilot).toBe(fx.pilot.uid);
    await fx.pmgr.waitPilots({ uids: [second!.uid], states: ['PMGR_ACTIVE'], timeoutMs: 15_000 });
    fx.tmgr.addPilots([second!]);

    const agentPid = agentTrace(fx.session.dir, fx.pilot.uid).pid!;
    process.kill(agentPid, 'SIGKILL');
    await fx.pmgr.waitPilots({ uids: [fx.pilot.uid], timeoutMs: 15_000 });
    expect([fx.pilot.state, fx.pilot.reason?.code]).toEqual(['FAILED', 'E_AGENT_DIED']);
    await waitForExit(taskPid, 10_000); // what the task started died with its agent

    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    for (const t of [running!, ...waiting]) {
      expect([t.uid, t.state, t.pilot]).toEqual([t.uid, 'DONE', second!.uid]);
    }
    // started on the lost pilot: a second attempt, charged to its retries, that says why
    expect([running!.attempt, running!.retried]).toEqual([2, 1]);
    // never started there: moved (a new attempt, which fences the old one), not charged
    for (const t of waiting) expect([t.attempt, t.retried]).toEqual([2, 0]);
    const ofAttempt = (uid: string, a: number): TaskState[] =>
      states
        .get(uid)!
        .filter((s) => s.startsWith(`${a}:`))
        .map((s) => s.slice(2) as TaskState);
    expect(ofAttempt('running', 1).at(-1)).toBe('AGENT_EXECUTING');
    expect(ofAttempt('running', 2)[0]).toBe('TMGR_SCHEDULING_PENDING');
    expect(ofAttempt('running', 2).at(-1)).toBe('DONE');
  }, 60_000);
});
