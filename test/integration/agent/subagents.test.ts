import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as zmq from 'zeromq';
import { SubAgentHubShell, type LaunchedSubAgent } from '../../../src/agent/subagents/hub-shell';
import { wireUid } from '../../../src/agent/subagents/hub-core';
import { SUPERVISOR } from '../../../src/agent/subagents/start';
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

/** The child processes of `pid` (its supervisor's: the sub-agent). */
function childrenOf(pid: number): number[] {
  try {
    const text = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8');
    return text
      .split(' ')
      .filter((s) => s !== '')
      .map(Number);
  } catch {
    return [];
  }
}

function kill(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone already
  }
}

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
    for (const list of children.values()) {
      for (const c of list) for (const pid of [...childrenOf(c.pid!), c.pid!]) kill(pid);
    }
    children.clear();
    fs.rmSync(dir, { recursive: true, force: true });
  }, 20_000);

  /** Starts the sub-agent of `node` under its supervisor, as the srun step of its node does. */
  function launch(node: string, address: string): LaunchedSubAgent {
    const argv = ['-c', SUPERVISOR, 'pf-subagent', process.execPath, MAIN, cfgFile, node, address];
    const child = spawn('/bin/sh', argv, { stdio: ['ignore', 'ignore', 'inherit'] });
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
    // the real sub-agent is up first (one job through it)
    hub.spawn('a', job('real', 'true'), 1);
    await seen.until('the real job', () => seen.exited.length === 1);
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
    expect(seen.exited.map((e) => e.uid)).toEqual(['real']);
  }, 20_000);

  it('a sub-agent killed with SIGKILL is started again and takes over its running job: it ends once, exit 0', async () => {
    const seen = new Seen();
    hub = await startHub(['a'], seen);
    const ran = path.join(dir, 'ran');
    hub.spawn('a', job('long', `sleep 1.5; echo once >> ${ran}`), 1);
    await seen.until('the long job started', () => seen.started.some((e) => e.uid === 'long'));
    const supervisor = children.get('a')![0]!.pid!;
    const [first] = childrenOf(supervisor);
    expect(first).toBeDefined();
    process.kill(first!, 'SIGKILL');
    await seen.until('the long job ended', () => seen.exited.some((e) => e.uid === 'long'));
    expect(seen.exited.filter((e) => e.uid === 'long')).toEqual([
      expect.objectContaining({ uid: 'long', exitCode: 0, signal: null }),
    ]);
    expect(seen.failed).toEqual([]);
    expect(fs.readFileSync(ran, 'utf8')).toBe('once\n');
    // the same step (no new launcher), a new sub-agent process in it
    expect(children.get('a')).toHaveLength(1);
    const [second] = childrenOf(supervisor);
    expect(second).toBeDefined();
    expect(second).not.toBe(first);
    hub.spawn('a', job('after', 'echo again'), 1);
    await seen.until('the next job', () => seen.exited.some((e) => e.uid === 'after'));
    expect(fs.readFileSync(path.join(dir, 'after.out'), 'utf8')).toBe('again\n');
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
