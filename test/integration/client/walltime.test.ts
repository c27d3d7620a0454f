import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { fixtures } from '../../support/session-fixture';

describe('pilots that know their end', () => {
  const fixture = fixtures();

  it('does not start a task on a pilot whose remaining time is shorter than its walltimeS: it runs on a second pilot', async () => {
    // the first pilot ends in 30 s; placement would pick it (added first, as empty as the other)
    const fx = await fixture.open({ runtimeMin: 0.5 }, false);
    const [long] = await fx.pmgr.submitPilots([{ resource: 'local', cores: 2, runtimeMin: 30 }]);
    fx.tmgr.addPilots([fx.pilot, long!]);
    await fx.pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 30_000 });
    const [needsTime, fits] = await fx.tmgr.submitTasks([
      { name: 'needs-time', executable: '/bin/true', walltimeS: 120 },
      { name: 'fits', executable: '/bin/true', walltimeS: 5 },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect([needsTime!.state, needsTime!.pilot]).toEqual(['DONE', long!.uid]);
    expect(fits!.state).toBe('DONE');
    expect(fits!.pilot).toBe(fx.pilot.uid); // the least loaded pilot, which has the time
  }, 60_000);

  it('fails a task no pilot has the time for (E_NO_PILOT_TIME), naming what each has left', async () => {
    const fx = await fixture.open({ runtimeMin: 1 });
    await fx.pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 30_000 });
    const [t] = await fx.tmgr.submitTasks([{ executable: '/bin/true', walltimeS: 3600 }]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect([t!.state, t!.reason?.code]).toEqual(['FAILED', 'E_NO_PILOT_TIME']);
    expect(t!.reason?.message).toMatch(
      new RegExp(`^task needs 3600 s \\(walltimeS\\) .*\\(${fx.pilot.uid}: \\d+ s\\)$`),
    );
  }, 60_000);

  it('gives back a waiting task at its latest start, while the pilot runs on: it runs on another pilot, no retry used', async () => {
    // 60 s of runtime; a task of 50 s queued behind a long one must start within 10 s
    const fx = await fixture.open({ runtimeMin: 1, cores: 1 });
    await fx.pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 30_000 });
    const why: unknown[] = [];
    fx.tmgr.onState((t, state, info) => {
      const named = t.description.name === 'late';
      if (named && state === 'TMGR_SCHEDULING_PENDING') why.push(info.reason);
    });
    const [long, late] = await fx.tmgr.submitTasks([
      { executable: '/bin/sleep', arguments: ['300'] },
      { name: 'late', executable: '/bin/true', walltimeS: 50 },
    ]);
    await fx.tmgr.waitTasks({ uids: [long!.uid], states: ['AGENT_EXECUTING'], timeoutMs: 20_000 });
    await fx.tmgr.waitTasks({ uids: [late!.uid], states: ['AGENT_SCHEDULING'], timeoutMs: 20_000 });
    // a second pilot comes once the task waits on the first, so it cannot go there first
    const [second] = await fx.pmgr.submitPilots([{ resource: 'local', cores: 1, runtimeMin: 5 }]);
    fx.tmgr.addPilots([second!]);
    await fx.tmgr.waitTasks({ uids: [late!.uid], timeoutMs: 40_000 });
    expect([late!.state, late!.attempt, late!.retried ?? 0, late!.pilot]).toEqual([
      'DONE',
      2,
      0,
      second!.uid,
    ]);
    // its first attempt ended with why, well before the first pilot's end
    expect(why).toEqual([
      undefined,
      expect.objectContaining({ code: 'E_PILOT_DRAINS', component: 'AgentScheduler' }),
    ]);
    expect(fx.pilot.state).toBe('PMGR_ACTIVE');
    await fx.tmgr.cancelTasks([long!.uid]);
  }, 90_000);

  it('signals running tasks signalBeforeEnd.seconds before the end, then retries them on another pilot', async () => {
    // 9 s of runtime, the signal 4 s before its end
    const fx = await fixture.open({
      runtimeMin: 0.15,
      signalBeforeEnd: { signal: 'SIGUSR1', seconds: 4 },
    });
    const marks = path.join(fx.dir, 'marks');
    // attempt 1 notes the signal and keeps running (killed at the end); attempt 2 ends at once
    const script = `trap 'echo "USR1 $PF_TASK_ATTEMPT $(date +%s%N)" >> ${marks}' USR1
echo "start $PF_TASK_ATTEMPT $(date +%s%N)" >> ${marks}
[ "$PF_TASK_ATTEMPT" = 1 ] || exit 0
while :; do sleep 0.1; done`;
    const [t] = await fx.tmgr.submitTasks([
      { executable: '/bin/bash', arguments: ['-c', script], retries: 1 },
    ]);
    const first = fx.pilot.uid;
    await fx.tmgr.waitTasks({ uids: [t!.uid], states: ['AGENT_EXECUTING'], timeoutMs: 30_000 });
    // the second pilot comes once the task runs on the first, so it cannot go there first
    const [second] = await fx.pmgr.submitPilots([{ resource: 'local', cores: 2, runtimeMin: 5 }]);
    fx.tmgr.addPilots([second!]);
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    await fx.pmgr.waitPilots({ uids: [first], timeoutMs: 30_000 });
    expect([t!.state, t!.attempt, t!.retried, t!.pilot]).toEqual(['DONE', 2, 1, second!.uid]);
    const lines = readFileSync(marks, 'utf8').trim().split('\n');
    expect(lines.map((l) => l.split(' ').slice(0, 2).join(' '))).toEqual([
      'start 1',
      'USR1 1',
      'start 2',
    ]);
    // the pilot says what its end left behind
    expect(fx.pilot.state).toBe('DONE');
    expect(fx.pilot.reason?.message).toMatch(
      /^runtime limit of 0.15 min reached; drained: 0 waiting task\(s\) returned to the client, 1 running task\(s\) killed, 1 signaled SIGUSR1 at the drain point$/,
    );
  }, 90_000);
});
