import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describeSlurm, slurmEnv } from '../../support/slurm';
import { fixtures } from '../../support/session-fixture';

// agent.subAgents 'per-node' on the lab cluster (scripts/slurm-up.sh: 8 nodes of 2 CPUs): one
// srun step per node for the pilot's life, and no srun per task. Every srun the agent runs is
// counted by an `srun` first on PATH (the pilot's job, and so its agent, inherits the client's
// environment) that logs its arguments and runs the real one. The agent is the built one
// (dist/): run `npx tsc -p tsconfig.build.json` first.

const REAL_SRUN = '/usr/bin/srun';
const TASKS = 64;

describeSlurm('an 8-node Slurm pilot with per-node sub-agents', () => {
  const fixture = fixtures();
  const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-subagent-srun-'));
  const log = path.join(bin, 'srun.log');
  const saved = process.env.PATH;

  beforeAll(() => {
    fs.writeFileSync(
      path.join(bin, 'srun'),
      // one line per srun (the sub-agents' step script has newlines of its own)
      `#!/bin/sh\n{ flock 9; printf '%s' "$*" | tr '\\n' ' ' >&9; echo >&9; } 9>>'${log}'\nexec ${REAL_SRUN} "$@"\n`,
      { mode: 0o755 },
    );
    process.env.PATH = `${bin}:${saved}`;
  });
  /** An 8-node pilot with per-node sub-agents, active. */
  async function activePilot() {
    Object.assign(process.env, slurmEnv());
    const fx = await fixture.open({
      resource: 'slurm',
      nodes: 8,
      runtimeMin: 5,
      agent: { subAgents: 'per-node' },
    });
    await fx.pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 60_000 });
    return fx;
  }

  /** `n` tasks that sleep `secs`, then append their index to `file` (so a second run shows). */
  const burst = (
    fx: Awaited<ReturnType<typeof activePilot>>,
    n: number,
    secs: number,
    file: string,
  ) =>
    fx.tmgr.submitTasks(
      Array.from({ length: n }, (_, i) => ({
        executable: '/bin/sh',
        arguments: ['-c', `sleep ${secs}; echo ${i} >> ${file}`],
      })),
    );
  /** The indices the tasks wrote, in order: each once if each ran once. */
  const ranLines = (file: string): string[] =>
    fs
      .readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .sort((a, b) => Number(a) - Number(b));
  /** Pids of the processes whose command line matches `pattern` (pgrep -f). */
  const pgrep = (pattern: string): string[] =>
    execFileSync('pgrep', ['-f', pattern], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l !== '');

  afterAll(() => {
    process.env.PATH = saved;
    fs.rmSync(bin, { recursive: true, force: true });
  });

  it('starts the tasks of all 8 nodes from their sub-agents: 8 srun steps in all, none per task', async () => {
    const fx = await activePilot();
    const tasks = await fx.tmgr.submitTasks(
      Array.from({ length: TASKS }, () => ({
        executable: '/bin/sh',
        // long enough that the 16 cores fill: every node gets tasks
        arguments: ['-c', 'echo "$(hostname)"; sleep 0.3'],
      })),
    );
    await fx.tmgr.waitTasks({ timeoutMs: 120_000 });
    for (const t of tasks) {
      expect([t.state, t.reason]).toEqual(['DONE', undefined]);
    }
    const hosts = new Set(tasks.map((t) => (t.stdout ?? '').trim()));
    const held = fx.pilot.nodes.map((n) => n.name);
    expect(held).toHaveLength(8);
    expect(hosts).toEqual(new Set(held));
    const sruns = fs
      .readFileSync(log, 'utf8')
      .split('\n')
      .filter((l) => l !== '');
    const steps = sruns.filter((l) => l.includes('--job-name=pf-subagent-'));
    expect(steps.map((l) => /--nodelist=(\S+)/.exec(l)?.[1]).sort()).toEqual([...held].sort());
    // what else ran srun: the agent's probes of the MPI plug-in at start, no task
    const others = sruns.filter((l) => !l.includes('--job-name=pf-subagent-'));
    expect(others.filter((l) => tasks.some((t) => l.includes(t.uid)))).toEqual([]);
    expect(others.filter((l) => !l.startsWith('--mpi='))).toEqual([]);
    expect(others.length).toBeLessThanOrEqual(2);
  }, 180_000);

  it('a sub-agent killed with SIGKILL is started again in its step, and its running tasks end DONE, once each', async () => {
    const fx = await activePilot();
    const ran = path.join(bin, 'ran');
    const tasks = await burst(fx, 16, 2, ran);
    await fx.tmgr.waitTasks({
      uids: tasks.map((t) => t.uid),
      states: ['AGENT_EXECUTING'],
      timeoutMs: 30_000,
    });
    // every node's sub-agent runs two of them: kill the one of the first node
    const node = fx.pilot.nodes[0]!.name;
    // the sub-agent's own process (not its step's srun or supervisor shell)
    const subAgentOf = `^\\S*node\\S* \\S+/subagents/main\\.js \\S+ ${node} tcp:`;
    const pids = pgrep(subAgentOf);
    expect(pids).toHaveLength(1);
    process.kill(Number(pids[0]), 'SIGKILL');
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    for (const t of tasks) expect([t.state, t.reason]).toEqual(['DONE', undefined]);
    expect(ranLines(ran)).toEqual(tasks.map((_, i) => String(i)));
    // started again in its step: the sub-agent of that node runs, a new process
    const again = pgrep(subAgentOf);
    expect(again).toHaveLength(1);
    expect(again[0]).not.toBe(pids[0]);
  }, 180_000);

  it('the main agent killed with SIGKILL is started again in the job, takes over what ran and waited, and every task ends DONE once', async () => {
    const fx = await activePilot();
    const ran = path.join(bin, 'ran-main');
    // 16 run on the 16 cores when the agent dies, 8 wait for a core
    const tasks = await burst(fx, 24, 3, ran);
    const running = () => tasks.filter((t) => t.state === 'AGENT_EXECUTING').length;
    await fx.tmgr.waitTasks({
      uids: tasks.slice(0, 16).map((t) => t.uid),
      states: ['AGENT_EXECUTING'],
      timeoutMs: 30_000,
    });
    expect(running()).toBe(16);
    const agentOf = (): string[] =>
      pgrep('agent/main\\.js agent\\.json').filter(
        (pid) => fs.readlinkSync(`/proc/${pid}/cwd`) === fx.pilot.sandbox,
      );
    const before = agentOf();
    expect(before).toHaveLength(1);
    process.kill(Number(before[0]), 'SIGKILL');
    await fx.tmgr.waitTasks({ timeoutMs: 90_000 });
    for (const t of tasks) expect([t.uid, t.state, t.reason]).toEqual([t.uid, 'DONE', undefined]);
    expect(ranLines(ran)).toEqual(tasks.map((_, i) => String(i)));
    // the pilot lives on, under a new agent its job script started
    expect(fx.pilot.state).toBe('PMGR_ACTIVE');
    const after = agentOf();
    expect(after).toHaveLength(1);
    expect(after[0]).not.toBe(before[0]);
    const err = fs.readFileSync(path.join(fx.pilot.sandbox, 'job.err'), 'utf8');
    expect(err).toContain('the agent died (exit 137): starting it again (1 of 3)');
  }, 240_000);
});
