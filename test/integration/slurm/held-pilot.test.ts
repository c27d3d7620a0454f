import { expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { agentTrace } from '../../support/client-child';
import { describeSlurm, slurmEnv } from '../../support/slurm';
import { fixtures } from '../../support/session-fixture';

const scontrol = (...args: string[]): string =>
  execFileSync('scontrol', args, { env: { ...process.env, ...slurmEnv() }, encoding: 'utf8' });

/** Late binding: a pilot waiting in the batch queue holds no task another pilot could run. */
describeSlurm('a Slurm pilot held in the queue beside an active local pilot', () => {
  const fixture = fixtures();

  it('gets no task while held and takes its share once released', async () => {
    Object.assign(process.env, slurmEnv());
    const fx = await fixture.open({ cores: 2 });
    const [held] = await fx.pmgr.submitPilots([
      // submitted held: the state `scontrol hold` puts a queued job in, without racing the start
      { resource: 'slurm', nodes: 1, runtimeMin: 5, directives: ['--hold'] },
    ]);
    fx.tmgr.addPilots([held!]);
    await fx.pmgr.waitPilots({
      uids: [held!.uid],
      states: ['PMGR_ACTIVE_PENDING'],
      timeoutMs: 30_000,
    });
    const jobId = agentTrace(fx.session.dir, held!.uid).jobId!;
    scontrol('hold', jobId); // as an operator would: already held, it stays so
    expect(scontrol('show', 'job', '-o', jobId)).toMatch(/JobState=PENDING Reason=JobHeld/);

    const sleepy = (n: number) =>
      Array.from({ length: n }, () => ({
        executable: '/bin/sh',
        arguments: ['-c', 'sleep 0.2'],
      }));
    const first = await fx.tmgr.submitTasks(sleepy(12));
    await fx.tmgr.waitTasks({ uids: first.map((t) => t.uid), timeoutMs: 60_000 });
    for (const t of first) expect([t.state, t.pilot]).toEqual(['DONE', fx.pilot.uid]);
    expect(held!.state).toBe('PMGR_ACTIVE_PENDING');

    scontrol('release', jobId);
    await fx.pmgr.waitPilots({ uids: [held!.uid], states: ['PMGR_ACTIVE'], timeoutMs: 60_000 });
    // more than the local pilot runs at once (2) plus its backlog: the rest goes to the other
    const second = await fx.tmgr.submitTasks(sleepy(160));
    await fx.tmgr.waitTasks({ uids: second.map((t) => t.uid), timeoutMs: 120_000 });
    const on = new Map<string | undefined, number>();
    for (const t of second) {
      expect(t.state).toBe('DONE');
      on.set(t.pilot, (on.get(t.pilot) ?? 0) + 1);
    }
    expect(on.get(held!.uid)).toBeGreaterThan(0);
    expect(on.get(fx.pilot.uid)).toBeGreaterThan(0);
  }, 240_000);

  it('cancelled while held, ends only the task pinned to it; the others run on the local pilot', async () => {
    Object.assign(process.env, slurmEnv());
    const fx = await fixture.open({ cores: 2 });
    const [held] = await fx.pmgr.submitPilots([
      { resource: 'slurm', nodes: 1, runtimeMin: 5, directives: ['--hold'] },
    ]);
    fx.tmgr.addPilots([held!]);
    const tasks = await fx.tmgr.submitTasks([
      ...Array.from({ length: 20 }, () => ({ executable: '/bin/true' })),
      { uid: 'pinned', executable: '/bin/true', pilot: held!.uid },
    ]);
    await fx.pmgr.waitPilots({
      uids: [held!.uid],
      states: ['PMGR_ACTIVE_PENDING'],
      timeoutMs: 30_000,
    });
    fx.pmgr.cancelPilots([held!.uid]);
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    expect(held!.state).toBe('CANCELED');
    const pinned = tasks.pop()!;
    for (const t of tasks) expect([t.state, t.pilot]).toEqual(['DONE', fx.pilot.uid]);
    expect([pinned.state, pinned.reason?.code]).toEqual(['CANCELED', 'E_CANCELED']);
    expect(pinned.reason?.message).toContain(held!.uid);
  }, 120_000);
});
