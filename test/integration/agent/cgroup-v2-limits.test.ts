import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runInVm, vmMissing, vmSharedDir, type VmRun } from '../../support/vm';

// Task limits on a machine whose cgroups are v2 alone (test/support/vm.ts: a real kernel under
// QEMU, every controller on the v2 tree), with the built agent (dist/) and both spawner helpers:
//   - the agent in the root of the tree (a container's case): a task past its memPerRankMb ends
//     FAILED E_OUT_OF_MEMORY while its neighbours end DONE; the task's own cgroup has the
//     memory, swap, pids and cpu limits asked; a fork bomb stays at its pids limit while other
//     tasks run; the pilot says nothing is unenforced;
//   - the agent alone in a cgroup that is not the root (a batch job's step): it moves into a
//     cgroup of its own below, limits work, and at its end it is back and the tree as it was;
//   - the agent sharing its cgroup with its client (a local pilot in a login shell's cgroup):
//     tasks run, and the pilot says why limits are not enforced.
// One machine runs it all (its boot and the emulated CPU take ~1 min): each case writes what it
// saw as JSON to the shared folder, and the tests below read it.

const ROOT = path.resolve(__dirname, '../../..');
const DIST = path.join(ROOT, 'dist/src');
const WHY_NOT = vmMissing() ?? (fs.existsSync(DIST) ? undefined : 'no dist/ (npm run build)');
const describeHere = WHY_NOT === undefined ? describe : describe.skip;

/** A client with a local pilot and the tasks of the first case; prints what it saw. */
const CLIENT = `
const { Session, PilotManager, TaskManager } = require(${JSON.stringify(DIST)});
const CG = '/sys/fs/cgroup$(sed -n "s/^0:://p" /proc/self/cgroup)';
const sh = (script, more = {}) => ({ executable: '/bin/sh', arguments: ['-c', script], ...more });
(async () => {
  const session = await Session.open({ dir: process.argv[2] });
  const out = {};
  try {
    const pmgr = new PilotManager(session);
    const tmgr = new TaskManager(session);
    const [pilot] = await pmgr.submitPilots([
      { resource: 'local', cores: 2, memMb: 1024, runtimeMin: 5, agent: { taskLimits: { pids: 64 } } },
    ]);
    tmgr.addPilots([pilot]);
    const [hog, n1, n2, probe] = await tmgr.submitTasks([
      sh('dd if=/dev/zero of=/dev/null bs=256M count=1', { memPerRankMb: 32, retries: 2 }),
      sh('dd if=/dev/zero of=/dev/null bs=8M count=8 2>/dev/null; echo ok', { memPerRankMb: 32 }),
      sh('dd if=/dev/zero of=/dev/null bs=8M count=8 2>/dev/null; echo ok', { memPerRankMb: 32 }),
      sh(\`cat \${CG}/memory.max \${CG}/memory.swap.max \${CG}/pids.max \${CG}/cpu.max\`, {
        memPerRankMb: 16,
        limits: { cpus: 0.5 },
      }),
    ]);
    await tmgr.waitTasks({ timeoutMs: 120000 });
    const seen = (t) => ({ state: t.state, attempt: t.attempt, reason: t.reason, stdout: t.stdout });
    Object.assign(out, { hog: seen(hog), neighbours: [seen(n1), seen(n2)], probe: seen(probe) });
    if (process.argv[3] === 'bomb') {
      // named whole: a starved client may learn of the bomb's end before of its sandbox
      const PIDS = require('path').join(process.argv[2], 'bomb-pids');
      const [bomb] = await tmgr.submitTasks([
        {
          executable: '/bin/bash',
          // bash gives up a fork after 15 s of retries and exits: the bomb is a subshell, and
          // the task waits on a sleeper forked first, so it ends by its timeout whatever the pace
          arguments: ['-c', \`[ "$(cat \${CG}/pids.max)" -le 64 ] || exit 3
            sleep 1000 & keeper=$!
            ( while :; do sleep 100 & echo $! >> \${PIDS}; done )
            wait $keeper\`],
          sandbox: true,
          // half a core: a bomb under emulation must not starve the client that watches it
          limits: { cpus: 0.5 },
          timeoutS: 20,
        },
      ]);
      // or final: a starved client may be told both at once
      const seenRunning = ['AGENT_EXECUTING', 'DONE', 'FAILED', 'CANCELED'];
      await tmgr.waitTasks({ uids: [bomb.uid], states: seenRunning, timeoutMs: 60000 });
      const others = await tmgr.submitTasks([1, 2, 3].map((i) => sh('echo t' + i)));
      await tmgr.waitTasks({ uids: others.map((t) => t.uid), timeoutMs: 60000 });
      const whileBombing = bomb.final;
      await tmgr.waitTasks({ uids: [bomb.uid], timeoutMs: 60000 });
      const forked = require('fs').readFileSync(PIDS, 'utf8').split('\\n').filter(Boolean).length;
      out.bomb = { ...seen(bomb), forked, whileBombing, others: others.map(seen) };
    }
    out.warnings = pilot.warnings;
    out.pilot = { state: pilot.state, reason: pilot.reason };
  } finally {
    await session.close();
  }
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { process.stdout.write(JSON.stringify({ error: String(e && e.stack) })); });
`;

/** An agent's SpawnerPool alone in a cgroup that is not the root; prints what it saw. */
const ALONE = `
const fs = require('fs');
const { SpawnerPool } = require(${JSON.stringify(DIST)} + '/components/executor/process/spawner-pool');
const { silentLogger } = require(${JSON.stringify(DIST)} + '/lib/logger');
const job = process.argv[2];
(async () => {
  const exits = [];
  let done;
  const ended = new Promise((r) => (done = r));
  const pool = await SpawnerPool.start({
    count: 1,
    logger: silentLogger,
    handlers: { started() {}, exited(evs) { exits.push(...evs); if (exits.length === 2) done(); }, failed(evs) { exits.push(...evs); done(); } },
  });
  const during = fs.readFileSync('/proc/self/cgroup', 'utf8').trim();
  const base = { args: [], env: {}, cwd: '/', stdoutPath: '/dev/null', stderrPath: '/dev/null' };
  pool.spawn({ ...base, uid: 'hog', executable: '/bin/dd', args: ['if=/dev/zero', 'of=/dev/null', 'bs=256M', 'count=1'], limits: { memoryBytes: 32 << 20 } });
  pool.spawn({ ...base, uid: 'fine', executable: '/bin/true', limits: { memoryBytes: 32 << 20, pids: 16 } });
  await ended;
  const limits = pool.limits.controllers;
  const why = pool.limits.why;
  await pool.close();
  process.stdout.write(JSON.stringify({
    exits, limits, why, during,
    after: fs.readFileSync('/proc/self/cgroup', 'utf8').trim(),
    subtree: fs.readFileSync(job + '/cgroup.subtree_control', 'utf8').trim(),
    left: fs.readdirSync(job, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name),
  }));
})().catch((e) => { process.stdout.write(JSON.stringify({ error: String(e && e.stack) })); });
`;

/** What the client saw of a task. */
interface Seen {
  state: string;
  attempt: number;
  reason?: { code: string; message: string; detail?: Record<string, unknown> };
  stdout?: string;
}

interface ClientResult {
  hog: Seen;
  neighbours: Seen[];
  probe: Seen;
  bomb: Seen & { forked: number; whileBombing: boolean; others: Seen[] };
  warnings?: string[];
  /** The pilot as the client knew it before closing (its reason, should the pilot fail). */
  pilot: { state: string; reason?: Seen['reason'] };
}

interface AloneResult {
  exits: {
    uid: string;
    exitCode?: number | null;
    signal?: string | null;
    oom?: { kills: number; limitBytes: number };
  }[];
  limits: string[];
  why?: string;
  during: string;
  after: string;
  subtree: string;
  left: string[];
}

describeHere(
  `task limits on a cgroup v2 machine${WHY_NOT === undefined ? '' : ` (skipped: ${WHY_NOT})`}`,
  () => {
    let dir: string;
    let run: VmRun;
    const result = <T>(name: string): T => {
      const file = path.join(dir, `${name}.json`);
      if (!fs.existsSync(file)) {
        throw new Error(`no ${name}.json; the machine said:\n${run.console}`);
      }
      const text = fs.readFileSync(file, 'utf8');
      if (text === '') {
        const err = fs.readFileSync(file.replace(/json$/, 'err'), 'utf8');
        throw new Error(
          `${name}: no result; its stderr:\n${err}\nthe machine said:\n${run.console}`,
        );
      }
      const r = JSON.parse(text) as { error?: string };
      if (r.error !== undefined) throw new Error(`${name}: ${r.error}`);
      return r as T;
    };

    beforeAll(async () => {
      dir = vmSharedDir('pf-cgroup-v2-');
      fs.writeFileSync(path.join(dir, 'client.js'), CLIENT);
      fs.writeFileSync(path.join(dir, 'alone.js'), ALONE);
      const cg = '/sys/fs/cgroup';
      run = await runInVm(
        `set -u
cd ${dir}
for helper in native node; do
  PILOTFISH_SPAWNER=$helper node client.js /run/s-$helper bomb > $helper.json 2> $helper.err
done
mkdir ${cg}/job
sh -c 'echo $$ > ${cg}/job/cgroup.procs; exec node alone.js ${cg}/job' > alone.json 2> alone.err
rmdir ${cg}/job
mkdir ${cg}/login
sh -c 'echo $$ > ${cg}/login/cgroup.procs; exec node client.js /run/s-login' > shared.json 2> shared.err
`,
        { dir, timeoutMs: 540_000 },
      );
    }, 560_000);

    afterAll(() => {
      if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true });
    });

    it.each(['native', 'node'])(
      'in the root of the tree, %s helper: OOM kill with its code, the limits in the task cgroup, a fork bomb held',
      (helper) => {
        const r = result<ClientResult>(helper);
        expect(r.hog).toMatchObject({ state: 'FAILED', attempt: 1 });
        expect(r.hog.reason).toMatchObject({ code: 'E_OUT_OF_MEMORY', detail: { limitMb: 32 } });
        for (const n of r.neighbours) expect(n).toMatchObject({ state: 'DONE', stdout: 'ok\n' });
        expect(r.probe).toMatchObject({ state: 'DONE', stdout: '16777216\n0\n64\n50000 100000\n' });
        expect(r.bomb).toMatchObject({ state: 'FAILED', whileBombing: false });
        expect({ code: r.bomb.reason?.code, message: r.bomb.reason?.message }).toMatchObject({
          code: 'E_TASK_TIMEOUT',
        });
        expect(r.bomb.forked).toBeGreaterThan(0);
        expect(r.bomb.forked).toBeLessThan(64);
        for (const t of r.bomb.others) expect(t.state).toBe('DONE');
        expect(r.warnings ?? []).toEqual([]);
      },
    );

    it('alone in a cgroup below the root: the agent moves into its own, limits work, all given back', () => {
      const r = result<AloneResult>('alone');
      expect(r.why).toBeUndefined();
      expect(r.limits).toEqual(['memory', 'pids', 'cpu']);
      expect(r.during).toMatch(/^0::\/job\/pilotfish-agent-\d+-[0-9a-f]+$/);
      const byUid = Object.fromEntries(r.exits.map((e) => [e.uid, e]));
      expect(byUid.hog).toMatchObject({
        signal: 'SIGKILL',
        oom: { kills: 1, limitBytes: 32 << 20 },
      });
      expect(byUid.fine).toMatchObject({ exitCode: 0 });
      expect(byUid.fine?.oom).toBeUndefined();
      expect(r.after).toBe('0::/job');
      expect(r.subtree).toBe('');
      expect(r.left).toEqual([]);
    });

    it('sharing its cgroup with its client: tasks run, and the pilot says why nothing is limited', () => {
      const r = result<ClientResult>('shared');
      // no limit: the 256 MiB fit in the machine (its reason beside, should it fail)
      expect({ state: r.hog.state, reason: r.hog.reason, pilot: r.pilot }).toEqual({
        state: 'DONE',
        reason: undefined,
        pilot: { state: 'PMGR_ACTIVE', reason: undefined },
      });
      expect(r.warnings).toHaveLength(1);
      expect(r.warnings![0]).toMatch(
        /^task limits are not enforced on this node: cannot enable memory, pids, cpu below '\/sys\/fs\/cgroup\/login' \(it holds processes other than the agent: \d+\): .*busy.*; limits need the agent in a cgroup of its own, delegated/,
      );
    });
  },
);
