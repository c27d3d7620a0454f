import { readFileSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { runtimeOf } from '../../../src/client/runtime/runtime';
import type { AgentConfig, TaskDescription, WaitReason } from '../../../src/generated';
import { UsageError } from '../../../src/errors';
import { silentLogger } from '../../../src/lib/logger';
import { ControlBus } from '../../../src/transport/control-bus';
import { deferred, withTimeout } from '../../../src/lib/deferred';
import { requestOf } from '../../../src/components/agent-scheduler/request';
import { explained } from '../../support/explained';
import { fixtures, type Fixture } from '../../support/session-fixture';

/** A task that runs until the test cancels it (or the session closes). */
const LONG: TaskDescription = { executable: '/bin/sleep', arguments: ['300'] };

async function running(fx: Fixture, d: TaskDescription): Promise<string> {
  const [t] = await fx.tmgr.submitTasks([d]);
  await fx.tmgr.waitTasks({ uids: [t!.uid], states: ['AGENT_EXECUTING'], timeoutMs: 20_000 });
  return t!.uid;
}

describe('tmgr.explain: why a task waits', () => {
  const fixture = fixtures();

  it('pilot: a task of a session with no pilot added waits for one', async () => {
    const fx = await fixture.open({}, false);
    const [t] = await fx.tmgr.submitTasks([{ executable: '/bin/true' }]);
    await fx.tmgr.waitTasks({ uids: [t!.uid], states: ['TMGR_SCHEDULING'], timeoutMs: 10_000 });
    const e = fx.tmgr.explain(t!.uid);
    expect(e.state).toBe('TMGR_SCHEDULING');
    expect(e.waiting).toMatchObject({ component: 'ManagerScheduler', pilots: [] });
    expect(e.waiting!.message).toContain('none is added');
    await fx.tmgr.cancelTasks();
  }, 30_000);

  it('dependencies: names the dependency and what it waits for', async () => {
    const fx = await fixture.open();
    const [a, svc, b] = await fx.tmgr.submitTasks([
      { ...LONG, uid: 'a' },
      { ...LONG, uid: 'svc', mode: 'service', service: { ready: { pattern: 'never' } } },
      { executable: '/bin/true', uid: 'b', after: ['a', { task: 'svc', on: 'ready' }] },
    ]);
    const e = await explained(fx, b!.uid, (x) => x.waiting?.kind === 'dependencies');
    expect(e.waiting!.dependencies).toEqual([
      expect.objectContaining({ task: a!.uid, on: 'done', waitsFor: 'end' }),
      expect.objectContaining({ task: svc!.uid, on: 'ready', waitsFor: 'ready' }),
    ]);
    // each with its state as the client knows it
    expect(e.waiting!.message).toMatch(
      /^waiting for dependencies: a \([A-Z_]+, not yet ended\), svc \([A-Z_]+, not yet ready\)$/,
    );
    await fx.tmgr.cancelTasks();
  }, 30_000);

  it('resources: a 2-core task behind a long one names the node and the largest free', async () => {
    const fx = await fixture.open({ cores: 2 });
    await running(fx, LONG);
    const [t] = await fx.tmgr.submitTasks([{ executable: '/bin/true', coresPerRank: 2 }]);
    const e = await explained(fx, t!.uid, (x) => x.waiting?.kind === 'resources');
    expect(e.state).toBe('AGENT_SCHEDULING');
    expect(e.pilot).toBe(fx.pilot.uid);
    expect(e.waiting).toMatchObject({
      component: 'AgentScheduler',
      asks: { ranks: 1, cores: 2, gpus: 0, memMb: 0 },
      largestFree: { node: os.hostname(), cores: 1, gpus: 0 },
    });
    expect(e.waiting!.message).toContain(`the most free now is node ${os.hostname()} with 1 cores`);
    await fx.tmgr.cancelTasks();
  }, 30_000);

  it('a function call waiting for a core says so, not "in transit" (its agent states are quiet)', async () => {
    const fx = await fixture.open({ cores: 1 });
    await running(fx, LONG);
    const mod = path.join(fx.session.dir, 'f.js');
    writeFileSync(mod, 'exports.f = () => 1;\n');
    const [t] = await fx.tmgr.submitTasks([
      { mode: 'function', function: { module: mod, export: 'f' } },
    ]);
    const e = await explained(fx, t!.uid, (x) => x.waiting?.component === 'AgentScheduler');
    // the client was last told of the hand-off; the agent says where the call is, and why
    expect(e.state).toBe('AGENT_STAGING_INPUT_PENDING');
    expect(e.waiting).toMatchObject({ kind: 'resources', asks: { ranks: 1, cores: 1 } });
    expect(e.waiting!.message).toMatch(
      /^in AGENT_SCHEDULING at the agent of pilot\.\d+ \(a function call's states there are not published\): waiting for 1 rank\(s\) x 1 cores, 0 GPUs, 0 MiB on one node/,
    );
    await fx.tmgr.cancelTasks();
  }, 30_000);

  it('reservation: a later task waits behind the big task the node is held for', async () => {
    // reserved at once (agent.backfillLimit 0): by default a few later tasks may pass it first
    const fx = await fixture.open({ cores: 4, agent: { backfillLimit: 0 } });
    await running(fx, LONG);
    const [big, small, next] = await fx.tmgr.submitTasks([
      { executable: '/bin/true', coresPerRank: 4, uid: 'big' },
      { executable: '/bin/true', uid: 'small' },
      { executable: '/bin/true', uid: 'next' },
    ]);
    const e = await explained(fx, small!.uid, (x) => x.waiting?.kind === 'reservation');
    expect(e.waiting).toMatchObject({ behind: big!.uid, nodes: [os.hostname()] });
    expect(e.waiting!.message).toContain('waiting behind task big');
    // a task asking the same as one ahead of it shares its reason, naming it
    const n = await explained(fx, next!.uid, (x) => x.waiting?.kind === 'reservation');
    expect(n.waiting).toMatchObject({ behind: big!.uid, ahead: small!.uid });
    expect(n.waiting!.message).toContain('(behind small, which asks the same)');
    const b = await explained(fx, big!.uid, (x) => x.waiting?.kind === 'resources');
    expect(b.waiting!.message).toContain('held for it (first in line)');
    await fx.tmgr.cancelTasks();
  }, 30_000);

  it('estimated start: a task behind one that declares walltimeS is expected when that ends', async () => {
    const fx = await fixture.open({ cores: 1 });
    const long = await running(fx, { ...LONG, walltimeS: 120 });
    const placed = fx.tmgr
      .get(long)!
      .history.find((h) => h.state === 'AGENT_EXECUTING_PENDING')!.ts!;
    const [next, after] = await fx.tmgr.submitTasks([
      { executable: '/bin/true', uid: 'next', walltimeS: 30 },
      { executable: '/bin/true', uid: 'after' },
    ]);
    const e = await explained(fx, next!.uid, (x) => x.estimatedStart !== undefined);
    // whole seconds, rounded up, from the agent's clock on this machine
    expect(Math.abs(e.estimatedStart! - (placed + 120_000))).toBeLessThanOrEqual(1_000);
    const a = await explained(fx, after!.uid, (x) => x.estimatedStart !== undefined);
    expect(a.estimatedStart).toBe(e.estimatedStart! + 30_000);
    // `after` declares no time: nothing behind it can be estimated
    const [last] = await fx.tmgr.submitTasks([{ executable: '/bin/true', uid: 'last' }]);
    const l = await explained(fx, last!.uid, (x) => x.noEstimate !== undefined);
    expect(l.noEstimate).toContain('declare neither walltimeS nor timeoutS');
    await fx.tmgr.cancelTasks([long]);
    await fx.tmgr.waitTasks({ uids: [next!.uid, after!.uid, last!.uid], timeoutMs: 20_000 });
    expect([next!.state, after!.state, last!.state]).toEqual(['DONE', 'DONE', 'DONE']);
  }, 40_000);

  it('backfill: by default a later task that fits starts ahead of the big one that does not, which then starts', async () => {
    const fx = await fixture.open({ cores: 4 });
    const long = await running(fx, LONG);
    const [big, small] = await fx.tmgr.submitTasks([
      { executable: '/bin/true', coresPerRank: 4, uid: 'big' },
      { executable: '/bin/true', uid: 'small' },
    ]);
    await fx.tmgr.waitTasks({ uids: [small!.uid], timeoutMs: 20_000 });
    // a wait for cores is published once it has lasted START_HOLD_MS
    await fx.tmgr.waitTasks({ uids: [big!.uid], states: ['AGENT_SCHEDULING'], timeoutMs: 20_000 });
    expect([small!.state, big!.state]).toEqual(['DONE', 'AGENT_SCHEDULING']);
    await fx.tmgr.cancelTasks([long]);
    await fx.tmgr.waitTasks({ uids: [big!.uid], timeoutMs: 20_000 });
    expect(big!.state).toBe('DONE');
  }, 30_000);

  it('exclusive tag: names the tag and the task holding it', async () => {
    const fx = await fixture.open({ cores: 2 });
    const holder = await running(fx, { ...LONG, tags: { exclusive: 'x' } });
    const [t] = await fx.tmgr.submitTasks([{ executable: '/bin/true' }]);
    const e = await explained(fx, t!.uid, (x) => x.waiting?.kind === 'tag');
    expect(e.waiting).toMatchObject({ tag: { exclusive: 'x' }, holders: [holder] });
    expect(e.waiting!.message).toContain(`held by exclusive tag 'x'`);
    await fx.tmgr.cancelTasks();
  }, 30_000);

  it('colocate tag: names the tag, the node it is bound to and the task holding it', async () => {
    const fx = await fixture.open({ cores: 2 });
    const holder = await running(fx, { ...LONG, tags: { colocate: 'g' } });
    await running(fx, LONG);
    const [t] = await fx.tmgr.submitTasks([{ executable: '/bin/true', tags: { colocate: 'g' } }]);
    const e = await explained(fx, t!.uid, (x) => x.waiting?.kind === 'tag');
    expect(e.waiting).toMatchObject({
      tag: { colocate: 'g' },
      holders: [holder],
      nodes: [os.hostname()],
      largestFree: { node: os.hostname(), cores: 0 },
    });
    expect(e.waiting!.message).toContain(`held by colocate tag 'g'`);
    await fx.tmgr.cancelTasks();
  }, 30_000);

  it('never: a task asking more cores than any pilot has fails with the sizes', async () => {
    const fx = await fixture.open({ cores: 2 });
    const [t] = await fx.tmgr.submitTasks([{ executable: '/bin/true', coresPerRank: 64 }]);
    await fx.tmgr.waitTasks({ uids: [t!.uid], timeoutMs: 20_000 });
    const e = fx.tmgr.explain(t!.uid);
    expect(e.state).toBe('FAILED');
    expect(e.waiting).toBeUndefined();
    expect(e.reason).toMatchObject({ code: 'E_NEVER_FITS' });
    expect(e.reason!.message).toContain('64 cores');
    expect(e.reason!.message).toContain(`${fx.pilot.uid}: 2 cores`);
    expect(() => fx.tmgr.explain('no-such-task')).toThrow(UsageError);
  }, 30_000);

  it('the reason clears when the task starts, at the client and in what the agent said', async () => {
    const fx = await fixture.open({ cores: 2 });
    const [first] = await fx.tmgr.submitTasks([{ ...LONG, coresPerRank: 2 }]);
    await fx.tmgr.waitTasks({ uids: [first!.uid], states: ['AGENT_EXECUTING'], timeoutMs: 20_000 });
    const d: TaskDescription = { ...LONG, coresPerRank: 2 };
    const [t] = await fx.tmgr.submitTasks([d]);
    await explained(fx, t!.uid, (x) => x.waiting?.kind === 'resources');
    await fx.tmgr.cancelTasks([first!.uid]);
    const e = await explained(fx, t!.uid, (x) => x.state === 'AGENT_EXECUTING');
    expect(e.waiting).toBeUndefined();
    const waits = runtimeOf(fx.session).links.waits;
    const key = (requestOf(d) as { key: string }).key;
    if (waits.get(fx.pilot.uid, key) !== undefined) {
      // the agent's clearing report follows within its report interval
      await explained(fx, t!.uid, () => waits.get(fx.pilot.uid, key) === undefined);
    }
    expect(waits.get(fx.pilot.uid, key)).toBeUndefined();
    await fx.tmgr.cancelTasks();
  }, 30_000);

  it('a malformed or foreign waiting report of an admitted agent is refused and counted', async () => {
    const fx = await fixture.open();
    await fx.pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 20_000 });
    const file = path.join(fx.session.dir, fx.pilot.uid, 'agent.json');
    const { addresses, curve } = JSON.parse(readFileSync(file, 'utf8')) as AgentConfig;
    // what a misbehaving agent could send with the pilot's own keys, on its own uplink
    const bus = new ControlBus(
      { in: addresses.controlUp, out: addresses.controlDown },
      fx.session.uid,
      silentLogger,
      curve,
    );
    try {
      await bus.ready();
      const rt = runtimeOf(fx.session);
      const before = rt.refusals().messages;
      const last = deferred<void>();
      const off = rt.control.on((m) => {
        if (m.type === 'agent_waits' && m.waits[0]?.shape === 'last') last.resolve();
      });
      const reason: WaitReason = { kind: 'resources', message: 'm', component: 'X', ts: 1 };
      const pilot = fx.pilot.uid;
      const bogus = { ...reason, kind: 'bogus' } as unknown as WaitReason;
      await bus.publish({ type: 'agent_waits', pilot, waits: [{ shape: 's', reason: bogus }] });
      const ghost = { shape: 's', task: 'ghost', attempt: 1, reason };
      await bus.publish({ type: 'agent_waits', pilot, waits: [ghost] });
      await bus.publish({ type: 'agent_waits', pilot, waits: [{ shape: 'last' }] }); // in order
      await withTimeout(last.promise, 10_000, 'the last report');
      off();
      expect(rt.refusals().messages - before).toBe(2);
      expect(rt.links.waits.get(pilot, 's')).toBeUndefined();
    } finally {
      await bus.close();
    }
    const [t] = await fx.tmgr.submitTasks([{ executable: '/bin/true' }]);
    await fx.tmgr.waitTasks({ timeoutMs: 20_000 });
    expect(t!.state).toBe('DONE');
  }, 30_000);
});
