import { afterEach, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AgentConfig, ControlMessage } from '../../../src/generated';
import { withTimeout } from '../../../src/lib/deferred';
import { silentLogger } from '../../../src/lib/logger';
import { Bridge } from '../../../src/transport/bridge';
import { ControlBus } from '../../../src/transport/control-bus';
import { EmbeddedStore } from '../../../src/updater/embedded/store';
import { StoreServer } from '../../../src/updater/embedded/store-server';
import { beat } from '../../support/heartbeats';

const AGENT = path.resolve(__dirname, '../../../dist/src/agent/main.js');

/** A local one-core agent whose client timeout is 600 ms. */
function agentConfig(
  dir: string,
  session: string,
  addresses: AgentConfig['addresses'],
): AgentConfig {
  return {
    session,
    pilot: 'hb-pilot',
    sandbox: dir,
    sessionDir: dir,
    cores: 1,
    gpus: 0,
    runtimeMin: 5,
    resource: 'local',
    watchStdin: false,
    heartbeatTimeoutMs: 600,
    addresses,
  };
}

describe('an agent that cannot watch its client (batch job)', () => {
  const closers: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  it('runs while heartbeats come, and drains and exits once they stop', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'pf-hb-'));
    closers.push(() => rmSync(dir, { recursive: true, force: true }));
    const store = await EmbeddedStore.open(dir);
    closers.push(() => store.close());
    const server = await StoreServer.start(store, { session: 'hb-session', logger: silentLogger });
    closers.push(() => server.close());
    const control = await Bridge.pubsub();
    const input = await Bridge.queue();
    const output = await Bridge.queue();
    closers.push(
      () => control.close(),
      () => input.close(),
      () => output.close(),
    );
    const bus = new ControlBus(control.endpoints, 'hb-session', silentLogger);
    closers.push(() => bus.close());
    await bus.ready();
    const seen: ControlMessage[] = [];
    const ready = new Promise<void>((resolve) =>
      bus.on((m) => {
        seen.push(m);
        if (m.type === 'agent_ready') resolve();
      }),
    );
    const cfg = agentConfig(dir, 'hb-session', {
      agentInput: input.endpoints.out,
      managerOutput: output.endpoints.in,
      controlUp: control.endpoints.in,
      controlDown: control.endpoints.out,
      store: server.endpoint,
    });
    writeFileSync(path.join(dir, 'agent.json'), JSON.stringify(cfg));
    const agent: ChildProcess = spawn(process.execPath, [AGENT, path.join(dir, 'agent.json')], {
      stdio: 'ignore', // stdin at EOF at once, as in a batch job: must not end the agent
    });
    closers.push(() => void agent.kill('SIGKILL'));
    const exited = new Promise<number | null>((resolve) => agent.once('exit', resolve));
    const beats = beat(bus, 100);
    await withTimeout(ready, 10_000, 'agent_ready');
    // alive across 15 heartbeats (1.5 s, well past the 600 ms timeout): the agent stays
    let count = 0;
    const fifteen = new Promise<void>((resolve) =>
      bus.on((m) => {
        if (m.type === 'heartbeat' && ++count === 15) resolve();
      }),
    );
    await withTimeout(fifteen, 10_000, '15 heartbeats');
    expect(agent.exitCode).toBeNull();
    beats.stop();
    const code = await withTimeout(exited, 10_000, 'agent exit after heartbeats stopped');
    expect(code).toBe(0);
    const final = seen.find((m) => m.type === 'agent_final');
    expect(final).toMatchObject({ type: 'agent_final', final: 'FAILED' });
    expect((final as { message: string }).message).toMatch(/lost the client: no heartbeat/);
  }, 30_000);

  it('exits after its client timeout when the client is gone before the agent reached it', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'pf-hb-'));
    closers.push(() => rmSync(dir, { recursive: true, force: true }));
    // addresses where nothing listens any more: the control probe can never come back
    const gone = await Bridge.pubsub();
    const queue = await Bridge.queue();
    await gone.close();
    await queue.close();
    const cfg = agentConfig(dir, 'hb-gone', {
      agentInput: queue.endpoints.out,
      managerOutput: queue.endpoints.in,
      controlUp: gone.endpoints.in,
      controlDown: gone.endpoints.out,
      store: queue.endpoints.in,
    });
    writeFileSync(path.join(dir, 'agent.json'), JSON.stringify(cfg));
    const agent = spawn(process.execPath, [AGENT, path.join(dir, 'agent.json')], {
      stdio: 'ignore',
    });
    closers.push(() => void agent.kill('SIGKILL'));
    const exited = new Promise<number | null>((resolve) => agent.once('exit', resolve));
    // well before the probe's own 10 s limit, and as a clean lost-client exit (0), not a crash
    const code = await withTimeout(exited, 6_000, 'agent exit with no client');
    expect(code).toBe(0);
    expect(readFileSync(path.join(dir, 'agent.log'), 'utf8')).toMatch(/lost the client/);
  }, 30_000);
});
