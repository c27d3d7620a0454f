import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { closedGate } from '../../support/flock-gate';
import { agentPids, killAgents } from '../../support/client-child';
import { runCli, startCli } from '../../support/cli';
import { waitForExit } from '../../support/processes';
import { lines } from '../../support/file-lines';

/** A workload of `n` tasks that append their uid to `log`, then run `then`, on one local pilot. */
function appenders(
  file: string,
  log: string,
  n: number,
  agent: Record<string, number>,
  then = 'sleep 0.3',
  cores = 2,
): void {
  const line = `echo "$PF_TASK_ID" >> ${log}; ${then}`;
  writeFileSync(
    file,
    JSON.stringify({
      pilots: [{ resource: 'local', cores, agent }],
      tasks: Array.from({ length: n }, () => ({ executable: '/bin/sh', arguments: ['-c', line] })),
    }),
  );
}

describe('pilotfish run killed with SIGKILL and resumed late', () => {
  const roots: string[] = [];
  afterEach(() => {
    for (const r of roots.splice(0)) {
      killAgents(r);
      rmSync(r, { recursive: true, force: true });
    }
  });
  const root = (): string => {
    const r = mkdtempSync(path.join(os.tmpdir(), 'pf-run-late-'));
    roots.push(r);
    return r;
  };

  it("resumed after its agent's client timeout: the agent worked on in its grace, every task ends DONE, none ran twice", async () => {
    const dir = root();
    const [file, log] = [path.join(dir, 'w.json'), path.join(dir, 'ran')];
    // a 2 s timeout (the old end of an agent without its client), the default grace
    appenders(file, log, 40, { clientTimeoutS: 2 });
    const first = startCli(['run', file, '--dir', dir]);
    const [, uid] = await first.stderrMatch(/session (pf\.\S+) /);
    await lines(log, 6);
    first.proc.kill('SIGKILL');
    const killed = Date.now();
    expect((await first.result).signal).toBe('SIGKILL');
    // 34 tasks of 0.3 s on 2 cores: the agent runs them past its client's timeout
    await lines(log, 40);
    expect(Date.now() - killed).toBeGreaterThan(2_000);
    const r = await runCli(['run', '--resume', uid!, '--dir', dir]);
    expect(r.stdout).toMatch(/^ {2}DONE\s+40$/m);
    expect(r.code).toBe(0);
    const ran = readFileSync(log, 'utf8').split('\n').filter(Boolean);
    expect(ran).toHaveLength(40);
    expect(new Set(ran).size).toBe(40);
    for (const pid of agentPids(dir)) await waitForExit(pid, 10_000);
  }, 90_000);

  it('resumed after its agent ended at the end of its grace: what it ran meanwhile reaches the store, every task ends DONE, none ran twice', async () => {
    const dir = root();
    const [file, log] = [path.join(dir, 'w.json'), path.join(dir, 'ran')];
    // a grace of 3 s: the agent runs the rest (0.05 s each, 2 at once) in it, then ends
    appenders(file, log, 40, { clientTimeoutS: 2, clientGraceS: 3 }, 'sleep 0.05');
    const first = startCli(['run', file, '--dir', dir]);
    const [, uid] = await first.stderrMatch(/session (pf\.\S+) /);
    await lines(log, 6);
    const agents = agentPids(dir);
    first.proc.kill('SIGKILL');
    expect((await first.result).signal).toBe('SIGKILL');
    for (const pid of agents) await waitForExit(pid, 30_000);
    const before = readFileSync(log, 'utf8').split('\n').filter(Boolean);
    // what its UpdateWorkers could not deliver, kept in its sandbox for the resume
    const sandbox = path.join(dir, uid!, 'pilot.0000');
    const kept = (): string[] => readdirSync(sandbox).filter((f) => f.startsWith('undelivered.'));
    expect(kept().length).toBeGreaterThan(0);
    const r = await runCli(['run', '--resume', uid!, '--dir', dir]);
    expect(kept()).toEqual([]); // taken into the store, then removed
    expect(r.stdout).toMatch(/^ {2}DONE\s+40$/m);
    expect(r.code).toBe(0);
    const ran = readFileSync(log, 'utf8').split('\n').filter(Boolean);
    expect(ran.slice(0, before.length)).toEqual(before);
    expect(ran).toHaveLength(40);
    expect(new Set(ran).size).toBe(40);
    for (const pid of agentPids(dir)) await waitForExit(pid, 10_000);
  }, 90_000);

  it('resumed after its agent was killed: a new pilot of the same description runs the tasks that never ran; the one that was running ends FAILED, not run again', async () => {
    const dir = root();
    const [file, log, gate] = [
      path.join(dir, 'w.json'),
      path.join(dir, 'ran'),
      path.join(dir, 'g'),
    ];
    const closed = await closedGate(gate);
    try {
      appenders(file, log, 8, {}, `flock -s ${gate} true`, 1);
      const first = startCli(['run', file, '--dir', dir]);
      const [, uid] = await first.stderrMatch(/session (pf\.\S+) /);
      await lines(log, 1);
      // the store knows the first task runs (its client learns it from there)
      for (let i = 0; ; i++) {
        const st = await runCli(['status', uid!, '--json', '--dir', dir]);
        if ((JSON.parse(st.stdout) as { runningTotal: number }).runningTotal === 1) break;
        expect(i).toBeLessThan(100);
      }
      first.proc.kill('SIGKILL');
      await first.result;
      const [agent] = agentPids(dir);
      process.kill(agent!, 'SIGKILL');
      await waitForExit(agent!, 10_000);
      await closed.open();
      const r = await runCli(['run', '--resume', uid!, '--dir', dir]);
      expect(r.stdout).toMatch(/^ {2}DONE\s+7$/m);
      expect(r.stdout).toMatch(/^ {2}FAILED\s+1$/m);
      expect(r.stdout).toMatch(/E_PILOT_ENDED/);
      const ran = readFileSync(log, 'utf8').split('\n').filter(Boolean);
      expect(ran).toHaveLength(8);
      expect(new Set(ran).size).toBe(8);
      // the replacement's agent, too, ends with the run
      const pids = agentPids(dir);
      expect(pids).toHaveLength(2);
      for (const pid of pids) await waitForExit(pid, 10_000);
    } finally {
      closed.remove();
    }
  }, 90_000);
});
