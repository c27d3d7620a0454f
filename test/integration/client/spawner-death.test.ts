import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import type { TaskDescription } from '../../../src/generated';
import { waitForExit } from '../../support/processes';
import { pidWritten } from '../../support/pid-file';
import { fixtures } from '../../support/session-fixture';
import { collect } from '../../support/tail-check';

const parentOf = (pid: number): number =>
  Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);

describe('spawner helpers killed under a running pilot', () => {
  const fixture = fixtures();

  it.each<[string, Pick<TaskDescription, 'output' | 'sandbox'>]>([
    // each task writes its pid file where it runs: a sandbox of its own either way
    ["output 'stream' (the default)", { sandbox: true }],
    ["output 'files'", { output: 'files' }],
  ])(
    '%s: fail the tasks they ran, with the reason, kill them, and are replaced for the next',
    async (_mode, extra) => {
      const fx = await fixture.open({ cores: 2, agent: { spawners: 2 } });
      const running = await fx.tmgr.submitTasks(
        [0, 1].map(() => ({
          executable: '/bin/sh',
          arguments: ['-c', 'echo $$ > pid; echo started; exec sleep 60'],
          ...extra,
        })),
      );
      await fx.tmgr.waitTasks({ states: ['AGENT_EXECUTING'], timeoutMs: 10_000 });
      const pids = await Promise.all(running.map((t) => pidWritten(t.sandbox!)));
      // what they printed is written (framed, or in their files) before their helpers die
      for (const t of running) {
        for await (const line of fx.tmgr.tail(t.uid, { follow: true })) {
          expect(line).toBe('started');
          break;
        }
      }
      const helpers = [...new Set(pids.map(parentOf))];
      for (const h of helpers) process.kill(h, 'SIGKILL');
      await fx.tmgr.waitTasks({ timeoutMs: 15_000 });
      for (const t of running) {
        expect([t.state, t.reason?.code, t.output]).toEqual([
          'FAILED',
          'E_EXEC_FAILED',
          extra.output ?? 'stream',
        ]);
        expect(t.reason?.message).toMatch(
          /the spawner helper \(pid \d+\) died \(killed by SIGKILL\)/,
        );
        // what they wrote before stays readable
        expect(await collect(fx.tmgr.tail(t.uid))).toEqual(['started']);
      }
      for (const pid of pids) await waitForExit(pid, 10_000);
      const after = await fx.tmgr.submitTasks(
        [0, 1, 2].map((i) => ({ executable: '/bin/echo', arguments: [`after ${i}`], ...extra })),
      );
      await fx.tmgr.waitTasks({ uids: after.map((t) => t.uid), timeoutMs: 15_000 });
      expect(after.map((t) => t.state)).toEqual(['DONE', 'DONE', 'DONE']);
      // the helpers that replaced them run tasks, and their output is there
      for (const [i, t] of after.entries()) {
        expect([t.stdout, await collect(fx.tmgr.tail(t.uid))]).toEqual([
          `after ${i}\n`,
          [`after ${i}`],
        ]);
      }
      expect(fx.pilot.state).toBe('PMGR_ACTIVE');
    },
    40_000,
  );
});
