import { afterAll, beforeAll, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describeSlurm, slurmEnv } from '../../support/slurm';
import { fixtures } from '../../support/session-fixture';

// agent.launchers on the lab cluster (scripts/slurm-up.sh: nodes of 2 CPUs): a burst of two-node
// tasks, each one srun step, never has more srun processes alive than the cap. They are counted
// by an `srun` first on PATH (the pilot's job, and so its agent, inherits the client's
// environment) that writes a line, under flock, when it starts and when the real srun it ran
// has ended. The agent is the built one (dist/): run `npx tsc -p tsconfig.build.json` first.

const CAP = 3;
const TASKS = 200;
const REAL_SRUN = '/usr/bin/srun';

/**
 * Logs `start|end <pid> <ns> <task>` around the real srun, for the agent's tasks only (its
 * start-up probe runs srun too, without PF_TASK_ID), and forwards the signals it gets. The
 * lines are written in the order they happened: each takes the lock before it reads the clock.
 */
const wrapper = (log: string): string => `#!/bin/sh
[ -n "$PF_TASK_ID" ] || exec ${REAL_SRUN} "$@"
note() { { flock 9; printf '%s %s %s %s\\n' "$1" $$ "$(date +%s%N)" "$PF_TASK_ID" >&9; } 9>>'${log}'; }
note start
exec 3<&0
${REAL_SRUN} "$@" <&3 3<&- &
child=$!
exec 3<&-
trap 'kill -TERM $child 2>/dev/null' TERM INT HUP
while :; do
  wait $child
  rc=$?
  kill -0 $child 2>/dev/null || break
done
note end
exit $rc
`;

interface Line {
  what: 'start' | 'end';
  pid: string;
  ns: bigint;
  task: string;
}

function readLines(log: string): Line[] {
  return fs
    .readFileSync(log, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const m = /^(start|end) (\d+) (\d+) (\S+)$/.exec(l);
      if (m === null) throw new Error(`unexpected line '${l}' in ${log}`);
      return { what: m[1] as Line['what'], pid: m[2]!, ns: BigInt(m[3]!), task: m[4]! };
    });
}

/** The most srun processes alive at once, from the lines in the order they were written. */
function maxAlive(lines: readonly Line[]): number {
  const alive = new Set<string>();
  let most = 0;
  for (const l of lines) {
    const key = `${l.pid} ${l.task}`;
    if (l.what === 'start') {
      alive.add(key);
      most = Math.max(most, alive.size);
    } else if (!alive.delete(key)) {
      throw new Error(`srun ${key} ended without a start`);
    }
  }
  if (alive.size > 0) throw new Error(`srun ${[...alive].join(', ')} never ended`);
  return most;
}

describeSlurm(`agent.launchers ${CAP} on an 8-node Slurm pilot`, () => {
  const fixture = fixtures();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-launchers-'));
  const log = path.join(dir, 'srun.log');
  const savedPath = process.env.PATH;

  beforeAll(() => {
    fs.mkdirSync(path.join(dir, 'bin'));
    fs.writeFileSync(path.join(dir, 'bin', 'srun'), wrapper(log), { mode: 0o755 });
    fs.writeFileSync(log, '');
  });

  afterAll(() => {
    process.env.PATH = savedPath;
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it(`runs a burst of ${TASKS} two-node tasks with at most ${CAP} srun alive at once`, async () => {
    Object.assign(process.env, slurmEnv());
    process.env.PATH = `${path.join(dir, 'bin')}:${savedPath}`;
    const fx = await fixture.open({
      resource: 'slurm',
      nodes: 8,
      runtimeMin: 5,
      agent: { launchers: CAP },
    });
    await fx.pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 60_000 });
    expect(fx.pilot.nodes).toHaveLength(8);
    // 2 cores per rank on 2-CPU nodes: one rank per node, so 4 of them fit the nodes at once
    const tasks = await fx.tmgr.submitTasks(
      Array.from({ length: TASKS }, () => ({
        ranks: 2,
        coresPerRank: 2,
        executable: '/bin/true',
      })),
    );
    await fx.tmgr.waitTasks({ timeoutMs: 120_000 });
    for (const t of tasks) {
      expect(t.reason).toBeUndefined();
      expect(t.state).toBe('DONE');
    }
    const lines = readLines(log);
    // every task was one srun process of its own
    const started = lines.filter((l) => l.what === 'start');
    expect(started).toHaveLength(TASKS);
    expect(new Set(started.map((l) => l.task))).toEqual(new Set(tasks.map((t) => t.uid)));
    for (let i = 1; i < lines.length; i++) expect(lines[i]!.ns >= lines[i - 1]!.ns).toBe(true);
    // the cap held, and was reached: the nodes alone would have let 4 run
    expect(maxAlive(lines)).toBe(CAP);
  }, 180_000);
});
