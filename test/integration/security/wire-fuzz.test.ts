import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { PilotManager } from '../../../src/client/pilot-manager';
import { runtimeOf } from '../../../src/client/runtime/runtime';
import { Session } from '../../../src/client/session';
import { TaskManager } from '../../../src/client/task-manager';
import type { AgentConfig } from '../../../src/generated';
import { withTimeout } from '../../../src/lib/deferred';
import { clientOptions } from '../../../src/transport/curve';
import { nativeMemory } from '../../../src/lib/native-memory';

const FUZZER = path.resolve(__dirname, '../../support/fuzzer.js');
const native = nativeMemory();

/**
 * The client's RSS once it has given back what it does not hold (what the session's memory
 * trimmer does at rest: V8's low-memory GC, then malloc_trim): garbage a storm leaves behind is
 * not growth, what the client keeps is.
 */
function settledRss(): number {
  native?.reduceHeap();
  native?.trim();
  return process.memoryUsage().rss;
}
const PER_KIND = Number(process.env.PF_FUZZ_PER_KIND ?? 10_000);
const MiB = 2 ** 20;

/** Runs the fuzzer child and returns what it says it sent. */
function fuzz(planFile: string): Promise<Record<string, number>> {
  const child = spawn(process.execPath, [FUZZER, planFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    err += d.toString();
    if (process.env.PF_FUZZ_DEBUG) process.stderr.write(d);
  });
  const done = new Promise<Record<string, number>>((resolve, reject) =>
    child.once('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(out) as Record<string, number>)
        : reject(new Error(`fuzzer ${code}: ${err}`)),
    ),
  );
  return withTimeout(done, 240_000, 'the fuzzer').finally(() => child.kill('SIGKILL'));
}

describe('the wire under fuzzing', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pf-fuzz-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it(`takes ${PER_KIND} malformed messages of each kind at every port while 2,000 tasks run`, async () => {
    const session = await Session.open({ dir });
    // where a peer without keys gets as far as the size check (oversize headers, by hand)
    const plain = await Session.open({ dir, insecure: 'trusted-network' });
    try {
      const plainPmgr = new PilotManager(plain, { shutdownGraceMs: 5_000 });
      const plainTmgr = new TaskManager(plain);
      const [plainPilot] = await plainPmgr.submitPilots([{ resource: 'local', cores: 1 }]);
      plainTmgr.addPilots([plainPilot!]);
      const pmgr = new PilotManager(session, { shutdownGraceMs: 5_000 });
      const tmgr = new TaskManager(session);
      const [pilot] = await pmgr.submitPilots([{ resource: 'local', cores: 2, runtimeMin: 10 }]);
      tmgr.addPilots([pilot!]);
      await pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 30_000 });
      await plainPmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 30_000 });
      const plainCfg = JSON.parse(
        readFileSync(path.join(plain.dir, plainPilot!.uid, 'agent.json'), 'utf8'),
      ) as AgentConfig;
      const cfg = JSON.parse(
        readFileSync(path.join(session.dir, pilot!.uid, 'agent.json'), 'utf8'),
      ) as AgentConfig;
      // warm up, so the first tasks' allocations are not counted as growth
      await tmgr.submitTasks(Array.from({ length: 200 }, () => ({ executable: '/bin/true' })));
      await tmgr.waitTasks({ timeoutMs: 60_000 });
      const rssBefore = settledRss();
      const planFile = path.join(dir, 'plan.json');
      writeFileSync(
        planFile,
        JSON.stringify({
          seed: 7,
          perKind: PER_KIND,
          oversize: 8,
          oversizeHeaders: PER_KIND,
          plainPorts: plainCfg.addresses,
          session: session.uid,
          pilot: pilot!.uid,
          ports: cfg.addresses,
          curve: clientOptions(cfg.curve),
        }),
      );
      const legit = tmgr.submitTasks(
        Array.from({ length: 2_000 }, (_, i) => ({ executable: '/bin/echo', arguments: [`${i}`] })),
      );
      const sent = await fuzz(planFile);
      const tasks = await legit;
      await tmgr.waitTasks({ timeoutMs: 180_000 });
      const grown = (settledRss() - rssBefore) / MiB;
      process.stderr.write(
        `wire fuzz: sent ${JSON.stringify(sent)}, client RSS +${grown.toFixed(1)} MiB\n`,
      );

      // at each port that takes messages (nothing can send to a PUSH: agentInput gets raw TCP)
      for (const kind of ['random', 'shape', 'truncated']) {
        expect(sent[kind]).toBeGreaterThanOrEqual(4 * PER_KIND);
      }
      expect(sent.raw).toBeGreaterThanOrEqual(5 * PER_KIND);
      expect(sent.oversizeHeaders).toBeGreaterThanOrEqual(PER_KIND);
      const after = await plainTmgr.submitTasks([{ executable: '/bin/true' }]);
      await plainTmgr.waitTasks({ timeoutMs: 30_000 });
      expect(after[0]!.state).toBe('DONE');
      tasks.forEach((t, i) => {
        expect(t.state).toBe('DONE');
        expect(t.stdout).toBe(`${i}\n`);
      });
      expect(pilot!.state).toBe('PMGR_ACTIVE');
      expect(grown).toBeLessThan(100);
      // the messages got past CurveZMQ to the checks (the agent's key), which refused them
      expect(runtimeOf(session).refusals().messages).toBeGreaterThan(1_000);
    } finally {
      await session.close();
      await plain.close();
    }
  }, 420_000);
});
