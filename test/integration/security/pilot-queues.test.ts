import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import * as zmq from 'zeromq';
import { PilotManager } from '../../../src/client/pilot-manager';
import { runtimeOf } from '../../../src/client/runtime/runtime';
import { Session } from '../../../src/client/session';
import { TaskManager } from '../../../src/client/task-manager';
import type { AgentConfig } from '../../../src/generated';
import { withTimeout } from '../../../src/lib/deferred';
import { encode } from '../../../src/transport/codec';
import { clientOptions, newKeyPair } from '../../../src/transport/curve';

/** Resolves with the first handshake failure `sock` reports (its peer refused it). */
async function refused(sock: zmq.Socket, what: string): Promise<string> {
  const failed = (async () => {
    for (;;) {
      const ev = await sock.events.receive();
      if (ev.type.startsWith('handshake:error')) return ev.type;
      if (ev.type === 'handshake') throw new Error(`${what}: admitted`);
    }
  })();
  return withTimeout(failed, 10_000, `${what} refused`);
}

/**
 * The two sockets the client binds for each pilot's task queues (its tasks out, their
 * hand-backs in) are CurveZMQ servers that admit that pilot's agent alone: not another pilot
 * of the same session, not a key the session never issued, not a peer without CURVE.
 */
describe("a pilot's task queue sockets", () => {
  const closers: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  it("admit that pilot's key alone: no task is stolen or forged", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'pf-pilot-queues-'));
    closers.push(() => rmSync(dir, { recursive: true, force: true }));
    const session = await Session.open({ dir });
    closers.push(() => session.close());
    const pmgr = new PilotManager(session, { shutdownGraceMs: 5_000 });
    const tmgr = new TaskManager(session);
    const [mine, other] = await pmgr.submitPilots([
      { resource: 'local', cores: 1, runtimeMin: 5 },
      { resource: 'local', cores: 1, runtimeMin: 5 },
    ]);
    tmgr.addPilots([mine!]);
    await pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 30_000 });
    const configOf = (uid: string): AgentConfig =>
      JSON.parse(readFileSync(path.join(session.dir, uid, 'agent.json'), 'utf8')) as AgentConfig;
    const { addresses, curve } = configOf(mine!.uid);
    const otherKeys = configOf(other!.uid).curve!;
    const [victim] = await tmgr.submitTasks([
      { executable: '/bin/sh', arguments: ['-c', 'sleep 2; echo victim'] },
    ]);
    await tmgr.waitTasks({ states: ['AGENT_EXECUTING'], timeoutMs: 20_000 });

    const before = runtimeOf(session).refusals().connections;
    const peers: [string, Partial<zmq.SocketOptions<zmq.Socket>>][] = [
      ['another pilot of the session', clientOptions(otherKeys)],
      ['a key never issued', clientOptions({ serverKey: curve!.serverKey, ...newKeyPair() })],
      ['a peer without CURVE', {}],
    ];
    const refusals: Promise<string>[] = [];
    for (const [who, opts] of peers) {
      // a PULL on the pilot's task queue would take tasks round-robin from its agent
      const thief = new zmq.Pull({ linger: 0, ...opts });
      closers.push(() => thief.close());
      refusals.push(refused(thief, `${who} on agentInput`));
      thief.connect(addresses.agentInput);
      // a PUSH on its hand-back queue would say the victim is done
      const forger = new zmq.Push({ linger: 0, ...opts });
      closers.push(() => forger.close());
      refusals.push(refused(forger, `${who} on managerOutput`));
      forger.connect(addresses.managerOutput);
      void forger
        .send(
          encode([
            {
              uid: victim!.uid,
              attempt: 1,
              state: 'TMGR_STAGING_OUTPUT_PENDING',
              session: session.uid,
              pilot: mine!.uid,
              description: victim!.description,
              exitCode: 0,
              stdout: 'forged\n',
            },
          ]),
        )
        .catch(() => undefined); // never taken: dropped at close
    }
    const failures = await Promise.all(refusals);
    expect(failures.every((f) => f.startsWith('handshake:error'))).toBe(true);
    // each refused CURVE peer was counted by the ZAP handler (a peer without CURVE never
    // reaches it: the mechanisms do not match)
    expect(runtimeOf(session).refusals().connections - before).toBeGreaterThanOrEqual(4);

    const tasks = await tmgr.submitTasks(
      Array.from({ length: 20 }, (_, i) => ({ executable: '/bin/echo', arguments: [`t${i}`] })),
    );
    await tmgr.waitTasks({ timeoutMs: 30_000 });
    expect(victim!.state).toBe('DONE');
    expect(victim!.stdout).toBe('victim\n');
    tasks.forEach((t, i) => {
      expect(t.state).toBe('DONE');
      expect(t.stdout).toBe(`t${i}\n`);
    });
  }, 90_000);
});
