import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import * as zmq from 'zeromq';
import type { AgentConfig } from '../../../src/generated';
import { clientOptions } from '../../../src/transport/curve';
import { QueueSender } from '../../../src/transport/queue';
import { Publisher } from '../../../src/transport/pubsub';
import { openFixture, type Fixture } from '../../support/session-fixture';

/** What a pilot's agent holds: its addresses and keys (a misbehaving agent sends with them). */
async function agentOf(fx: Fixture): Promise<AgentConfig> {
  await fx.pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 20_000 });
  const file = path.join(fx.session.dir, fx.pilot.uid, 'agent.json');
  return JSON.parse(readFileSync(file, 'utf8')) as AgentConfig;
}

describe('malformed wire messages from an admitted agent', () => {
  let fx: Fixture | undefined;
  const closers: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0)) await c();
    await fx?.close();
    fx = undefined;
  });

  it('are rejected by every client-facing socket without losing the valid traffic', async () => {
    fx = await openFixture();
    const { addresses, curve } = await agentOf(fx);
    // garbage where agents push returned tasks, publish control messages and send store batches
    const output = new QueueSender(addresses.managerOutput, curve);
    closers.push(() => output.close());
    await output.send({ not: 'a bulk' });
    await output.send([{ uid: 'ghost', state: 'TMGR_STAGING_OUTPUT_PENDING' }]);
    const raw = new zmq.Push({ linger: 0, ...clientOptions(curve) });
    closers.push(() => raw.close());
    raw.connect(addresses.managerOutput);
    await raw.send(Buffer.from([0xc1, 0xc1, 0xc1])); // 0xc1 is never valid msgpack
    const pub = new Publisher(addresses.controlUp, curve);
    closers.push(() => pub.close());
    await pub.publish({ type: 'cancel_tasks', uids: [1, 2] });
    await pub.publish({ type: 'self_destruct' });
    const dealer = new zmq.Dealer({ linger: 0, ...clientOptions(curve) });
    closers.push(() => dealer.close());
    dealer.connect(addresses.store!); // an embedded session: its pilots have a store socket
    await dealer.send(Buffer.from('not msgpack'));
    const [reply] = await dealer.receive();
    expect(reply).toBeDefined();

    // a malformed record of a known task ends that task FAILED with the reason: nothing is lost
    const [victim] = await fx.tmgr.submitTasks([{ executable: '/bin/sleep', arguments: ['30'] }]);
    await fx.tmgr.waitTasks({
      uids: [victim!.uid],
      states: ['AGENT_EXECUTING'],
      timeoutMs: 10_000,
    });
    await output.send([
      {
        uid: victim!.uid,
        attempt: 1,
        state: 'TMGR_STAGING_OUTPUT_PENDING',
        session: fx.session.uid,
        pilot: fx.pilot.uid,
        // an agent hands tasks back without their descriptions: the client's own are used
        description: { executable: '/bin/rm', arguments: ['-rf', '/'] },
        exitCode: 0,
      },
    ]);
    await fx.tmgr.waitTasks({ uids: [victim!.uid], timeoutMs: 10_000 });
    expect(victim!.state).toBe('FAILED');
    expect(victim!.reason).toMatchObject({
      code: 'E_BAD_MESSAGE',
      component: 'ManagerOutputStager',
    });
    expect(victim!.reason?.message).toContain("/0/ must not have property 'description'");

    const tasks = await fx.tmgr.submitTasks(
      Array.from({ length: 20 }, () => ({ executable: '/bin/true' })),
    );
    await fx.tmgr.waitTasks({ timeoutMs: 15_000 });
    expect(tasks.every((t) => t.state === 'DONE')).toBe(true);
  }, 25_000);

  it('costs a counter, not a log line each: a flood of garbage leaves a bounded log', async () => {
    fx = await openFixture();
    const { addresses, curve } = await agentOf(fx);
    const raw = new zmq.Push({ linger: 0, ...clientOptions(curve) });
    closers.push(() => raw.close());
    raw.connect(addresses.managerOutput);
    for (let i = 0; i < 2_000; i++) await raw.send(Buffer.from([0xc1, i & 0xff]));
    const pub = new Publisher(addresses.controlUp, curve);
    closers.push(() => pub.close());
    for (let i = 0; i < 2_000; i++) await pub.publish({ type: 'self_destruct', i });
    // traffic after the flood still runs, so the flood has been read by then
    const tasks = await fx.tmgr.submitTasks(
      Array.from({ length: 20 }, () => ({ executable: '/bin/true' })),
    );
    await fx.tmgr.waitTasks({ timeoutMs: 15_000 });
    expect(tasks.every((t) => t.state === 'DONE')).toBe(true);
    await fx.session.close(); // the log is flushed
    const log = readFileSync(path.join(fx.session.dir, 'client.log'), 'utf8').split('\n');
    const lines = (text: string): number => log.filter((l) => l.includes(text)).length;
    expect(lines('"undecodable message rejected"')).toBeGreaterThan(0);
    expect(lines('"undecodable message rejected"')).toBeLessThanOrEqual(10);
    expect(lines('"invalid control message refused"')).toBeGreaterThan(0);
    expect(lines('"invalid control message refused"')).toBeLessThanOrEqual(10);
  }, 25_000);
});
