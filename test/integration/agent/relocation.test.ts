import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { FileChannel } from '../../../src/agent/file-channel';
import type { AgentAddresses } from '../../../src/agent/relocation/effects';
import { moveConnections, RelocationShell } from '../../../src/agent/relocation/shell';
import { FileServer } from '../../../src/client/files/server';
import { SessionSecurity } from '../../../src/client/pilots/session-security';
import {
  openSessionControl,
  type SessionControl,
} from '../../../src/client/pilots/session-control';
import { QueueSet } from '../../../src/components/shared/queue-set';
import type { ControlMessage } from '../../../src/generated';
import { withTimeout } from '../../../src/lib/deferred';
import { silentLogger } from '../../../src/lib/logger';
import { ControlBus } from '../../../src/transport/control-bus';
import type { ClientSecurity, KeyPair } from '../../../src/transport/curve';
import { BoundQueueReceiver, BoundQueueSender } from '../../../src/transport/queue';
import { AddressBoard } from '../../../src/updater/mongodb/addresses';
import { FakeClock } from '../../support/fake-clock';
import { recordingLogger } from '../../support/secrets';

const SESSION = 'pf.relocation-test';
const PILOT = 'pilot.0000';
const TASK = 'task.000000';

/** One value from a listener-style source, within 10 s. */
function first<T>(subscribe: (resolve: (v: T) => void) => void, what: string): Promise<T> {
  return withTimeout(new Promise<T>(subscribe), 10_000, what);
}

/**
 * The client's end of one pilot, as a (resumed) session binds it on `host`: the shared control
 * socket, the pilot's uplink, its task queue, its hand-back queue and its file socket, each a
 * CURVE server admitting the pilot's key (the session's key pair read from its directory).
 */
async function clientAt(host: string, dir: string, pilotKey: string) {
  const security = await SessionSecurity.open(SESSION, dir, silentLogger);
  security.admit(PILOT, pilotKey);
  const at = `tcp://${host}:0`;
  const server = security.forPilot(PILOT);
  const control: SessionControl = await openSessionControl(
    SESSION,
    at,
    undefined,
    security,
    silentLogger,
  );
  const controlUp = await control.uplinks.add(PILOT, at, server);
  const input = await BoundQueueSender.listen(at, server);
  const output = await BoundQueueReceiver.listen(at, server);
  const files = new FileServer({ session: SESSION, log: silentLogger });
  const filesAt = await files.listen(PILOT, at, server);
  await control.bus.ready();
  const addresses: AgentAddresses = {
    controlDown: control.down,
    controlUp,
    agentInput: input.address,
    managerOutput: output.address,
    files: filesAt,
  };
  const close = async (): Promise<void> => {
    await control.bus.close();
    await control.uplinks.close();
    await control.bridge.close();
    await input.discard();
    output.close();
    await files.close();
    await security.close();
  };
  return { addresses, control, input, output, files, close, security };
}

type Client = Awaited<ReturnType<typeof clientAt>>;

/** The agent's connections, made to `a` as from its bootstrap file. */
function agentAt(a: AgentAddresses, keys: ClientSecurity) {
  const queues = new QueueSet();
  const control = new ControlBus(
    { in: a.controlUp, out: a.controlDown },
    SESSION,
    silentLogger,
    keys,
  );
  const toClient = queues.sender(a.managerOutput, keys);
  const tasks: unknown[] = [];
  let taken: ((v: unknown) => void) | undefined;
  queues.loop(
    a.agentInput,
    async (r) => {
      for await (const m of r.messages()) {
        if (!m.ok) continue;
        tasks.push(m.value);
        taken?.(m.value);
      }
    },
    keys,
  );
  const files = new FileChannel({
    address: a.files!,
    security: keys,
    session: SESSION,
    pilot: PILOT,
    log: silentLogger,
    timeoutMs: 5_000,
  });
  const nextTask = (): Promise<unknown> => first((r) => (taken = r), 'a task bulk at the agent');
  const close = async (): Promise<void> => {
    await control.close();
    await files.close();
    await queues.close();
  };
  return { queues, control, toClient, files, nextTask, close };
}

type AgentEnd = ReturnType<typeof agentAt>;

/** Checks each connection both ways between the agent and `client`. */
async function flows(agent: AgentEnd, client: Client, dir: string, n: number): Promise<void> {
  // control, both ways: the agent's probe goes up its uplink and comes back down
  await agent.control.ready();
  const down = first<ControlMessage>((r) => agent.control.on(r), 'a heartbeat at the agent');
  await client.control.bus.publish({ type: 'heartbeat', ts: n });
  expect(await down).toMatchObject({ type: 'heartbeat', ts: n, session: SESSION });
  const up = first<ControlMessage>(
    (r) => client.control.bus.on((m) => m.type === 'agent_heartbeat' && r(m)),
    'an agent heartbeat at the client',
  );
  await agent.control.publish({ type: 'agent_heartbeat', pilot: PILOT });
  expect(await up).toMatchObject({ type: 'agent_heartbeat', pilot: PILOT });
  // the task queue (client -> agent) and the hand-back queue (agent -> client)
  const task = agent.nextTask();
  await client.input.send([{ uid: `in.${n}` }]);
  expect(await task).toEqual([{ uid: `in.${n}` }]);
  const back = withTimeout(
    (async () => {
      for await (const m of client.output.messages()) if (m.ok) return m.value;
      return undefined;
    })(),
    10_000,
    'a hand-back at the client',
  );
  await agent.toClient.send([{ uid: `out.${n}` }]);
  expect(await back).toEqual([{ uid: `out.${n}` }]);
  // the file channel: a client file fetched by the agent
  const src = path.join(dir, `client-${n}.txt`);
  fs.writeFileSync(src, `from client ${n}\n`);
  client.files.allow(PILOT, TASK, { read: [src] });
  const local = path.join(dir, `node-${n}.txt`);
  await agent.files.fetch(TASK, src, local);
  expect(fs.readFileSync(local, 'utf8')).toBe(`from client ${n}\n`);
}

describe("an agent's connections moved to a client that listens elsewhere", () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  it('flow both ways at the new addresses, with the same keys, after the old client died', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-relocate-'));
    closers.push(() => Promise.resolve(fs.rmSync(dir, { recursive: true, force: true })));
    // the session's key pair and the pilot's, as the first client made them
    const made = await SessionSecurity.open(SESSION, dir, silentLogger);
    const pilotKeys: KeyPair = made.issue(PILOT);
    const keys = made.client(pilotKeys);
    await made.close();

    const one = await clientAt('127.0.0.1', dir, pilotKeys.publicKey);
    let oneOpen = true;
    closers.push(() => (oneOpen ? one.close() : Promise.resolve()));
    const agent = agentAt(one.addresses, keys);
    closers.push(() => agent.close());
    await flows(agent, one, dir, 1);

    // the first client dies; the next listens on another host (another machine's, here loopback)
    await one.close();
    oneOpen = false;
    const two = await clientAt('127.0.0.2', dir, pilotKeys.publicKey);
    closers.push(() => two.close());
    const hosts = Object.values(two.addresses).map((a: string | undefined) => a?.split(':')[1]);
    expect(new Set(hosts)).toEqual(new Set(['//127.0.0.2']));

    moveConnections(
      { control: agent.control, queues: agent.queues, files: agent.files },
      one.addresses,
      two.addresses,
    );
    await flows(agent, two, dir, 2);
    expect(two.security.refused()).toBe(0);
  }, 30_000);

  it('move only what connects to the old address, and nothing when it is the same', () => {
    const queues = new QueueSet();
    const a = queues.sender('tcp://127.0.0.1:1');
    const b = queues.sender('tcp://127.0.0.1:2');
    expect(queues.move('tcp://127.0.0.1:1', 'tcp://127.0.0.2:1')).toBe(1);
    expect([a.address, b.address]).toEqual(['tcp://127.0.0.2:1', 'tcp://127.0.0.1:2']);
    expect(queues.move('tcp://127.0.0.1:2', 'tcp://127.0.0.1:2')).toBe(0);
    closers.push(() => queues.close());
  });
});

describe('RelocationShell with no MongoDB server answering', () => {
  it('says once that it cannot read, never names the URI, and moves nothing', async () => {
    const clock = new FakeClock();
    const rec = recordingLogger();
    let warned!: () => void;
    const warning = withTimeout(new Promise<void>((r) => (warned = r)), 10_000, 'the warning');
    const log = {
      ...rec,
      warn: (m: string, meta?: Record<string, unknown>) => (rec.warn(m, meta), warned()),
    };
    const addresses: AgentAddresses = {
      controlDown: 'tcp://127.0.0.1:1',
      controlUp: 'tcp://127.0.0.1:2',
      agentInput: 'tcp://127.0.0.1:3',
      managerOutput: 'tcp://127.0.0.1:4',
    };
    let moved = 0;
    const shell = new RelocationShell({
      session: SESSION,
      pilot: PILOT,
      // nothing listens on port 1; the password must show nowhere
      source: () =>
        AddressBoard.connect('mongodb://u:pw-9Xq@127.0.0.1:1/x?serverSelectionTimeoutMS=200', 'x'),
      addresses,
      heartbeatTimeoutMs: 30_000,
      clock,
      log,
      connections: () => {
        throw new Error('nothing to move');
      },
      moved: () => moved++,
    });
    shell.core.onStart();
    clock.advance(6_000); // silent: it looks
    await warning;
    expect(rec.lines).toHaveLength(1);
    expect(rec.lines[0]).toContain('cannot read where the client listens');
    expect(rec.lines[0]).toContain('127.0.0.1:1');
    clock.advance(2_000); // still silent: it looks again, and fails again, quietly
    await shell.close(); // once that read is over
    expect(rec.lines).toHaveLength(1);
    expect(rec.lines.join('\n')).not.toContain('pw-9Xq');
    expect(moved).toBe(0);
    expect(shell.core.inUse).toEqual({ epoch: 0, addresses });
  }, 15_000);
});
