import { afterEach, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PoolLimits, V1_ROOT_ENV } from '../../../src/components/executor/process/pool-limits';
import { silentLogger } from '../../../src/lib/logger';
import { fixtures } from '../../support/session-fixture';
import { pidWritten } from '../../support/pid-file';
import { waitForExit } from '../../support/processes';
import { tempDirs } from '../../support/temp-dirs';

const DIST = path.resolve(__dirname, '../../../dist/src');

// A real local pilot (the built agent, dist/) and the limits of its tasks' cgroups: a task past
// its memPerRankMb ends FAILED E_OUT_OF_MEMORY while its neighbours end DONE; a fork bomb stays
// at its pids limit while other tasks run, and its timeout ends every process of it; where no
// limit can be set, the agent says so once. Skipped where the cgroup v1 controllers cannot be
// written.

function limitsHere(): string | undefined {
  const probe = PoolLimits.make({}, silentLogger);
  void probe.close();
  return probe.why;
}
const WHY_NOT = limitsHere();
const describeHere = WHY_NOT === undefined ? describe : describe.skip;

/** The agent log's lines with this message, parsed. */
function logged(sandbox: string, message: string): Record<string, unknown>[] {
  return fs
    .readFileSync(path.join(sandbox, 'agent.log'), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((e) => e.message === message);
}

/** The task's own pids cgroup (this machine mounts pids on its own). */
const PIDS_DIR = '/sys/fs/cgroup/pids$(sed -n "s/^[0-9]*:pids://p" /proc/self/cgroup)';

describeHere(
  `task limits of a local pilot${WHY_NOT === undefined ? '' : ` (skipped: ${WHY_NOT})`}`,
  () => {
    const fixture = fixtures();
    const pids: number[] = [];

    afterEach(() => {
      for (const pid of pids.splice(0)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone, as it should be
        }
      }
    });

    it('a task past its memPerRankMb ends FAILED E_OUT_OF_MEMORY, not retried; its neighbours end DONE', async () => {
      const fx = await fixture.open({ cores: 3, memMb: 1024 });
      const [hog, ...neighbours] = await fx.tmgr.submitTasks([
        {
          executable: '/bin/sh',
          arguments: ['-c', 'dd if=/dev/zero of=/dev/null bs=256M count=1'],
          memPerRankMb: 32,
          retries: 2,
        },
        ...[1, 2].map(() => ({
          executable: '/bin/sh',
          arguments: ['-c', 'dd if=/dev/zero of=/dev/null bs=8M count=8 2>/dev/null; echo ok'],
          memPerRankMb: 32,
        })),
      ]);
      await fx.tmgr.waitTasks({ timeoutMs: 20_000 });
      expect(hog!.state).toBe('FAILED');
      expect(hog!.attempt).toBe(1);
      expect(hog!.reason).toMatchObject({
        code: 'E_OUT_OF_MEMORY',
        detail: { limitMb: 32 },
      });
      expect(hog!.reason!.message).toContain('memory limit of 32 MiB');
      for (const t of neighbours) {
        expect(t.state).toBe('DONE');
        expect(t.stdout).toBe('ok\n');
      }
    }, 30_000);

    it('a fork bomb stays at its pids limit while other tasks run; its timeout ends all of it', async () => {
      const fx = await fixture.open({ cores: 2, agent: { taskLimits: { pids: 32 } } });
      // Refuses to run unless its pids cgroup holds it (pids.max at most 64): no runaway here.
      // bash retries a fork that fails (EAGAIN) and goes on: the bomb keeps trying.
      const [bomb] = await fx.tmgr.submitTasks([
        {
          executable: '/bin/bash',
          arguments: [
            '-c',
            `[ "$(cat ${PIDS_DIR}/pids.max)" -le 64 ] || exit 3
           echo $$ > pid; while :; do sleep 100 & echo $! >> pids; done`,
          ],
          sandbox: true,
          timeoutS: 4,
        },
      ]);
      await fx.tmgr.waitTasks({
        uids: [bomb!.uid],
        states: ['AGENT_EXECUTING'],
        timeoutMs: 10_000,
      });
      pids.push(await pidWritten(bomb!.sandbox!));
      const others = await fx.tmgr.submitTasks(
        Array.from({ length: 6 }, (_, i) => ({ executable: '/bin/echo', arguments: [`t${i}`] })),
      );
      await fx.tmgr.waitTasks({ uids: others.map((t) => t.uid), timeoutMs: 15_000 });
      for (const t of others) expect(t.state).toBe('DONE');
      expect(bomb!.final).toBe(false); // they ran while it was bombing
      await fx.tmgr.waitTasks({ uids: [bomb!.uid], timeoutMs: 15_000 });
      expect(bomb!.state).toBe('FAILED');
      expect(bomb!.reason?.code).toBe('E_TASK_TIMEOUT');
      const forked = fs
        .readFileSync(path.join(bomb!.sandbox!, 'pids'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map(Number);
      pids.push(...forked);
      expect(forked.length).toBeGreaterThan(0);
      expect(forked.length).toBeLessThan(32);
      await Promise.all(pids.map((pid) => waitForExit(pid, 10_000)));
    }, 40_000);
  },
);

/** A client in a process of its own (Jest's process.env does not reach children). */
const CLIENT = `
const { Session, PilotManager, TaskManager } = require(process.argv[1]);
(async () => {
  const session = await Session.open({ dir: process.argv[2] });
  try {
    const pmgr = new PilotManager(session);
    const tmgr = new TaskManager(session);
    const [pilot] = await pmgr.submitPilots([{ resource: 'local', cores: 1, runtimeMin: 2 }]);
    tmgr.addPilots([pilot]);
    const tasks = await tmgr.submitTasks([
      { executable: '/bin/echo', arguments: ['a'], memPerRankMb: 16 },
      { executable: '/bin/echo', arguments: ['b'], limits: { pids: 64 } },
    ]);
    await tmgr.waitTasks({ timeoutMs: 30000 });
    process.stdout.write(JSON.stringify({ session: session.dir, sandbox: pilot.sandbox, states: tasks.map((t) => t.state), warnings: pilot.warnings }));
  } finally {
    await session.close();
  }
})();
`;

describe('a local pilot where no task limit can be set', () => {
  const temp = tempDirs('pf-no-limits-');

  it('says so once in its log and its pilot info, and runs its tasks without', async () => {
    const dir = temp.make();
    const env = { ...process.env, [V1_ROOT_ENV]: '/nonexistent/cgroup' }; // the agent inherits it
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ['-e', CLIENT, DIST, dir],
        { env, timeout: 60_000 },
        (e, stdout, stderr) => (e === null ? resolve(stdout) : reject(new Error(stderr))),
      ),
    );
    const { session, sandbox, states, warnings } = JSON.parse(out) as {
      session: string;
      sandbox: string;
      states: string[];
      warnings: string[];
    };
    expect(states).toEqual(['DONE', 'DONE']);
    const said = logged(sandbox, 'task limits are not enforced here');
    expect(said).toHaveLength(1);
    expect(said[0]!.why).toMatch(/^memory: cannot create '\/nonexistent\/cgroup\/memory\//);
    // the pilot's info: its agent_ready's warnings (pilot.warnings), which the client logs too
    expect(warnings.filter((w) => w.startsWith('task limits are not enforced'))).toHaveLength(1);
    const client = fs.readFileSync(path.join(session, 'client.log'), 'utf8');
    const warned = client
      .split('\n')
      .filter((l) => l.includes('"pilot resources"') && l.includes('task limits are not enforced'));
    expect(warned).toHaveLength(1);
  }, 90_000);
});
