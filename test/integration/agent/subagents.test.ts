import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as zmq from 'zeromq';
import { SubAgentHubShell, type LaunchedSubAgent } from '../../../src/agent/subagents/hub-shell';
import { SUBAGENT_LOST, wireUid } from '../../../src/agent/subagents/hub-core';
import { subAgentFrame } from '../../../src/agent/subagents/wire';
import type {
  ExitedEvent,
  FailedEvent,
  StartedEvent,
} from '../../../src/components/executor/effects';
import { systemClock } from '../../../src/lib/clock';
import { silentLogger } from '../../../src/lib/logger';
import { clientOptions, newKeyPair } from '../../../src/transport/curve';
import { ZapHandler } from '../../../src/transport/zap';

const MAIN = path.resolve(__dirname, '../../../dist/src/agent/subagents/main.js');

/** What the hub told the Executor, with waits on it. */
class Seen {
  started: StartedEvent[] = [];
  exited: ExitedEvent[] = [];
  failed: FailedEvent[] = [];
  private waiters: (() => void)[] = [];
  add(): void {
    for (const w of this.waiters.splice(0)) w();
  }
  until(what: string, test: () => boolean, ms = 15_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
      const check = (): void => {
        if (test()) {
          clearTimeout(timer);
          resolve();
        } else this.waiters.push(check);
      };
      check();
    });
  }
}

describe('sub-agents and their hub (real processes, CurveZMQ)', () => {
  let dir: string;
  let cfgFile: string;
  let hub: SubAgentHubShell | undefined;
  const children = new Map<string, ChildProcess[]>();
  const pilotKeys = newKeyPair();
  const curve = { serverKey: newKeyPair().publicKey, ...pilotKeys };

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-subagents-'));
    cfgFile = path.join(dir, 'agent.json');
    const cfg = {
      session: 's.1',
      pilot: 'p.1',
      sandbox: dir,
      sessionDir: dir,
      cores: 2,
      gpus: 0,
      runtimeMin: 5,
      spawners: 1,
      killGraceMs: 500,
      curve,
      addresses: {
        agentInput: 'tcp://127.0.0.1:1',
        managerOutput: 'tcp://127.0.0.1:1',
        controlUp: 'tcp://127.0.0.1:1',
        controlDown: 'tcp://127.0.0.1:1',
      },
    };
    fs.writeFileSync(cfgFile, JSON.stringify(cfg), { mode: 0o600 });
  });

  afterEach(async () => {
    await hub?.close(5_000);
    hub = undefined;
    for (const list of children.values()) for (const c of list) c.kill('SIGKILL');
    children.clear();
    fs.rmSync(dir, { recursive: true, force: true });
  }, 20_000);

  /** Starts the sub-agent of `node` as a local child process, as one srun step would. */
  function launch(node: string, address: string): LaunchedSubAgent {
    const child = spawn(process.execPath, [MAIN, cfgFile, node, address], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    children.set(node, [...(children.get(node) ?? []), child]);
    const ended = new Promise<string>((resolve) =>
      child.once('exit', (code, signal) => resolve(signal ?? `exit ${code}`)),
    );
    return { ended, kill: () => child.kill('SIGKILL') };
  }

  async function startHub(nodes: string[], seen: Seen): Promise<SubAgentHubShell> {
    return SubAgentHubShell.start({
      session: 's.1',
      pilot: 'p.1',
      nodes,
      curve,
      bind: 'tcp://127.0.0.1:*',
      clock: systemClock,
      log: silentLogger,
      launch,
      started: (evs) => {
        seen.started.push(...evs);
        seen.add();
      },
      exited: (evs) => {
        seen.exited.push(...evs);
        seen.add();
      },
      failed: (evs) => {
        seen.failed.push(...evs);
        seen.add();
      },
    });
  }

  const job = (uid: string, script: string) => ({
    uid,
    executable: '/bin/sh',
    args: ['-c', script],
    env: {},
    cwd: dir,
    stdoutPath: path.join(dir, `${uid}.out`),
    stderrPath: path.join(dir, `${uid}.err`),
  });

  it('runs each node’s jobs in that node’s sub-agent, one process per node for the pilot', async () => {
    const seen = new Seen();
    hub = await startHub(['a', 'b'], seen);
    for (const node of ['a', 'b']) {
      for (let i = 0; i < 5; i++) {
        hub.spawn(node, job(`${node}${i}`, `echo "$PPID ${node}${i}"`), 1);
      }
    }
    await seen.until('10 exits', () => seen.exited.length === 10);
    expect(seen.exited.every((e) => e.exitCode === 0)).toBe(true);
    expect(new Set(seen.exited.map((e) => e.uid)).size).toBe(10);
    expect(seen.started.map((e) => e.uid).sort()).toEqual(seen.exited.map((e) => e.uid).sort());
    // one sub-agent process per node started everything there: no launcher per job
    expect([...children.values()].map((l) => l.length)).toEqual([1, 1]);
    const parentsOf = (node: string): Set<string> =>
      new Set(
        [0, 1, 2, 3, 4].map(
          (i) => fs.readFileSync(path.join(dir, `${node}${i}.out`), 'utf8').split(' ')[0]!,
        ),
      );
    // each node's jobs share a parent (its spawner helper), the two nodes' differ
    expect(parentsOf('a').size).toBe(1);
    expect(parentsOf('b').size).toBe(1);
    expect([...parentsOf('a')][0]).not.toBe([...parentsOf('b')][0]);
  }, 30_000);

  it('admits only the pilot’s key: a peer with another key is refused', async () => {
    const seen = new Seen();
    hub = await startHub(['a'], seen);
    const zap = await ZapHandler.shared();
    const before = zap.refused('subagents/p.1');
    const intruder = new zmq.Dealer({
      routingId: 'a',
      linger: 0,
      ...clientOptions({ serverKey: pilotKeys.publicKey, ...newKeyPair() }),
    });
    intruder.connect(hub.address);
    const frame = subAgentFrame({
      type: 'events',
      session: 's.1',
      pilot: 'p.1',
      node: 'a',
      ended: [{ ev: 'exited', uid: wireUid('x', 1), exitCode: 0, signal: null }],
    });
    void intruder.send(frame);
    // the intruder's own socket hears that the hub's ZAP handler refused its key
    for (;;) {
      const ev = await intruder.events.receive();
      if (ev.type === 'handshake:error:auth') break;
    }
    expect(zap.refused('subagents/p.1')).toBeGreaterThan(before);
    intruder.close();
    await zap.release([]);
    expect(seen.exited).toEqual([]);
  }, 20_000);

  it('a sub-agent killed with SIGKILL is started again; its lost job fails E_SUBAGENT_LOST, new jobs run', async () => {
    const seen = new Seen();
    hub = await startHub(['a'], seen);
    hub.spawn('a', job('long', 'sleep 30'), 1);
    await seen.until('the long job started', () => seen.started.some((e) => e.uid === 'long'));
    children.get('a')![0]!.kill('SIGKILL');
    await seen.until('the long job failed', () => seen.failed.some((e) => e.uid === 'long'));
    expect(seen.failed.find((e) => e.uid === 'long')).toMatchObject({
      code: SUBAGENT_LOST,
      message: expect.stringContaining("the sub-agent on 'a' ended (SIGKILL)"),
    });
    hub.spawn('a', job('after', 'echo again'), 1);
    await seen.until('the next job', () => seen.exited.some((e) => e.uid === 'after'));
    expect(children.get('a')).toHaveLength(2);
    expect(fs.readFileSync(path.join(dir, 'after.out'), 'utf8')).toBe('again\n');
    expect(seen.exited.some((e) => e.uid === 'long')).toBe(false);
  }, 30_000);

  it('close() ends every sub-agent: they exit 0 and their jobs die with them', async () => {
    const seen = new Seen();
    hub = await startHub(['a', 'b'], seen);
    hub.spawn('a', job('held', 'echo $$ > held.pid; exec sleep 30'), 1);
    await seen.until('started', () => seen.started.length === 1);
    const pidFile = path.join(dir, 'held.pid');
    await seen.until('its pid file', () => fs.existsSync(pidFile) && fs.statSync(pidFile).size > 0);
    const pid = Number(fs.readFileSync(pidFile, 'utf8'));
    const exits = [...children.values()]
      .flat()
      .map((c) => new Promise<number | null>((resolve) => c.once('exit', (code) => resolve(code))));
    await hub.close(10_000);
    hub = undefined;
    expect(await Promise.all(exits)).toEqual([0, 0]);
    expect(() => process.kill(pid, 0)).toThrow();
  }, 30_000);
});
