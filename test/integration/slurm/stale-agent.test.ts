import { expect, it } from '@jest/globals';
import { readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { runtimeOf } from '../../../src/client/runtime/runtime';
import { TimeoutError } from '../../../src/errors';
import { agentTrace } from '../../support/client-child';
import { pidWritten } from '../../support/pid-file';
import { waitForExit } from '../../support/processes';
import { fixtures } from '../../support/session-fixture';
import { describeSlurm, slurmCommand, slurmEnv, waitForJobEnd } from '../../support/slurm';

/** Pids of the processes whose command line contains `text`. */
function pidsWith(text: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0').join(' ').includes(text)) {
        out.push(Number(d));
      }
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Resolves once `check()` holds; no event tells when a refused message was counted. */
async function until(check: () => boolean, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new TimeoutError(`${what}: not after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The agent's own watchdog, late by more than this, looks again before judging (a stall). */
const AGENT_STALL_MS = 1_000;

/**
 * Fencing (PyLet's): an agent declared lost whose kill did not reach it comes back later. Its
 * node is cut off here by stopping the node's slurmd (Slurm cannot deliver the scancel) and the
 * agent itself with SIGSTOP past the heartbeat limit; then the agent is continued.
 */
describeSlurm('a stale agent, back after its pilot was declared lost', () => {
  const fixture = fixtures();

  it.each([
    // (under load the continue may come late enough to be a stall: then as below)
    [
      'about as long as the limit: it sees the client was silent and ends',
      0,
      /lost the client|taken over/,
    ],
    // stopped well past its own watchdog, it reads the client's heartbeats that waited and
    // would go on: the client, hearing an agent of an ended pilot, tells it to stop
    ['well past the limit: the client tells it to stop', 2 * AGENT_STALL_MS, /taken over/],
  ])(
    'stopped %s; it kills what it ran, and nothing it reports is taken',
    async (_, moreMs, why) => {
      const slurm = slurmEnv()!;
      Object.assign(process.env, slurm);
      const fx = await fixture.open({
        resource: 'slurm',
        nodes: 1,
        runtimeMin: 5,
        agent: { clientTimeoutS: 3, clientGraceS: 3 },
      });
      await fx.pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 60_000 });
      const callbacks: string[] = [];
      fx.tmgr.onState((t, s, info) => callbacks.push(`${t.uid} ${info.attempt} ${s}`));
      // attempt 1 runs on the Slurm pilot: `short` ends while its agent is stopped, `long` not;
      // each writes its pid file in a sandbox of its own
      const first = (cmd: string) => `echo $$ > pid; [ "$PF_TASK_ATTEMPT" = 1 ] && ${cmd}; true`;
      const [short, long] = await fx.tmgr.submitTasks([
        {
          uid: 'short',
          retries: 1,
          executable: '/bin/sh',
          arguments: ['-c', first('sleep 1')],
          sandbox: true,
        },
        {
          uid: 'long',
          retries: 1,
          executable: '/bin/sh',
          arguments: ['-c', first('exec sleep 60')],
          sandbox: true,
        },
      ]);
      const uids = ['short', 'long'];
      await fx.tmgr.waitTasks({ uids, states: ['AGENT_EXECUTING'], timeoutMs: 30_000 });
      const longPid = await pidWritten(long!.sandbox!);
      const shortPid = await pidWritten(short!.sandbox!);

      const jobId = agentTrace(fx.session.dir, fx.pilot.uid).jobId!;
      const job = await slurmCommand(slurm, 'scontrol', ['-o', 'show', 'job', jobId]);
      const node = /\bNodeList=(\S+)/.exec(job)![1]!;
      const [slurmd] = pidsWith(`slurmd -f `).filter((p) =>
        readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').join(' ').endsWith(`-N ${node} `),
      );
      const [agent] = pidsWith('agent.json').filter(
        (p) => readlinkSync(`/proc/${p}/cwd`) === realpathSync(fx.pilot.sandbox),
      );
      expect([slurmd, agent]).toEqual([expect.any(Number), expect.any(Number)]);
      process.kill(slurmd!, 'SIGSTOP');
      try {
        process.kill(agent!, 'SIGSTOP');
        const [local] = await fx.pmgr.submitPilots([
          { resource: 'local', cores: 2, runtimeMin: 5 },
        ]);
        fx.tmgr.addPilots([local!]);

        await fx.pmgr.waitPilots({ uids: [fx.pilot.uid], timeoutMs: 30_000 });
        expect([fx.pilot.state, fx.pilot.reason?.code]).toEqual(['FAILED', 'E_AGENT_SILENT']);
        await fx.tmgr.waitTasks({ uids, timeoutMs: 30_000 });
        for (const t of [short!, long!]) {
          expect([t.uid, t.state, t.attempt, t.pilot]).toEqual([t.uid, 'DONE', 2, local!.uid]);
        }
        await waitForExit(shortPid, 10_000); // attempt 1 of `short` ended under the stopped agent
        // the fault lasts this long: the duration is the point here, not a wait for something
        await new Promise((r) => setTimeout(r, moreMs));
        const seen = [...callbacks];
        const refused = runtimeOf(fx.session).refusals().messages;

        process.kill(agent!, 'SIGCONT');
        // it reports `short` and `long` (attempt 1): refused; it is told to stop, and does
        await until(
          () => runtimeOf(fx.session).refusals().messages > refused,
          'the stale agent reports something',
          20_000,
        );
        await waitForExit(longPid, 20_000);
        await waitForExit(agent!, 20_000);
        const ending = readFileSync(`${fx.pilot.sandbox}/agent.log`, 'utf8')
          .split('\n')
          .find((l) => l.includes('agent shutting down'));
        expect(ending).toMatch(why);
        // nothing the stale agent said reached a task or a callback
        expect(callbacks).toEqual(seen);
        for (const t of [short!, long!]) {
          expect([t.uid, t.state, t.attempt, t.pilot]).toEqual([t.uid, 'DONE', 2, local!.uid]);
        }
        expect(callbacks.filter((c) => c.startsWith('long 1 ')).at(-1)).toBe(
          'long 1 AGENT_EXECUTING',
        );
      } finally {
        process.kill(slurmd!, 'SIGCONT');
        try {
          process.kill(agent!, 'SIGCONT');
        } catch {
          // gone, as it should be
        }
        await waitForJobEnd(slurm, jobId, 60_000);
      }
    },
    180_000,
  );
});
