import { beforeEach, describe, expect, it } from '@jest/globals';
import {
  SUBAGENT_LOST,
  SubAgentHubCore,
  wireUid,
  type SubAgentHubEffects,
  type SubAgentOps,
} from '../../../src/agent/subagents/hub-core';
import type { SpawnSpec } from '../../../src/components/executor/effects';
import { FakeClock } from '../../support/fake-clock';

/** Every effect the hub asked for, in order. */
class Recorded implements SubAgentHubEffects {
  readonly calls: [string, ...unknown[]][] = [];
  send(node: string, ops: SubAgentOps): void {
    this.calls.push(['send', node, ops]);
  }
  startSubAgent(node: string): void {
    this.calls.push(['startSubAgent', node]);
  }
  started(events: unknown[]): void {
    this.calls.push(['started', events]);
  }
  exited(events: unknown[]): void {
    this.calls.push(['exited', events]);
  }
  failed(events: unknown[]): void {
    this.calls.push(['failed', events]);
  }
  silent(parts: unknown[]): void {
    this.calls.push(['silent', parts]);
  }
  nodeLost(node: string, why: string): void {
    this.calls.push(['nodeLost', node, why]);
  }
  take(): [string, ...unknown[]][] {
    return this.calls.splice(0);
  }
}

function spec(uid: string): SpawnSpec {
  return {
    uid,
    executable: '/bin/true',
    args: [],
    env: {},
    cwd: '/tmp',
    stdoutPath: 'o',
    stderrPath: 'e',
  };
}

const OPTS = { nodes: ['n1', 'n2'], silentAfterMs: 3_000, lostAfterMs: 30_000, maxRestarts: 2 };

describe('SubAgentHubCore', () => {
  let clock: FakeClock;
  let fx: Recorded;
  let hub: SubAgentHubCore;
  beforeEach(() => {
    clock = new FakeClock();
    fx = new Recorded();
    hub = new SubAgentHubCore(fx, clock, OPTS);
    hub.onStart();
  });
  const hello = (node: string, inc: string, running: string[] = [], ended: unknown[] = []) =>
    hub.onHello(node, {
      incarnation: inc,
      running: running.map((uid, i) => ({ uid, pid: 100 + i })),
      ended: ended as never,
    });

  it('starts one sub-agent per node, and holds ops until its sub-agent says hello', () => {
    expect(fx.take()).toEqual([
      ['startSubAgent', 'n1'],
      ['startSubAgent', 'n2'],
    ]);
    hub.spawn('n1', spec('t1'), 1);
    hub.spawn('n1', spec('t2'), 1);
    hub.flush();
    expect(fx.take()).toEqual([]); // n1 is not up yet
    hello('n1', 'a');
    const sent = fx.take();
    expect(sent).toHaveLength(1);
    const ops = sent[0]![2] as SubAgentOps;
    expect(ops.spawn.map((s) => s.uid)).toEqual([wireUid('t1', 1), wireUid('t2', 1)]);
    // once up, a flush sends at once, one message per node per flush
    hub.spawn('n1', spec('t3'), 1);
    hub.spawn('n1', spec('t4'), 1);
    hub.flush();
    const next = fx.take();
    expect(next.map((c) => [c[0], c[1], (c[2] as SubAgentOps).spawn.length])).toEqual([
      ['send', 'n1', 2],
    ]);
  });

  it('gives events under task uids, each once, and ignores events of jobs it did not give', () => {
    hello('n1', 'a');
    hub.spawn('n1', spec('t1'), 2);
    hub.flush();
    fx.take();
    const w = wireUid('t1', 2);
    hub.onStarted('n1', [{ uid: w, pid: 7 }]);
    hub.onStarted('n1', [{ uid: w, pid: 7 }]);
    hub.onStarted('n2', [{ uid: w, pid: 7 }]); // not where it went
    hub.onEnded('n1', [{ ev: 'exited', uid: w, exitCode: 0, signal: null }]);
    hub.onEnded('n1', [{ ev: 'exited', uid: w, exitCode: 0, signal: null }]);
    hub.onEnded('n1', [{ ev: 'exited', uid: wireUid('t1', 1), exitCode: 1, signal: null }]);
    expect(fx.take()).toEqual([
      ['started', [{ uid: 't1', pid: 7 }]],
      ['exited', [{ uid: 't1', exitCode: 0, signal: null }]],
    ]);
  });

  it('accounts for every job when a restarted sub-agent says hello: running, ended meanwhile, lost', () => {
    hello('n1', 'a');
    for (const t of ['run', 'done', 'gone']) hub.spawn('n1', spec(t), 1);
    hub.flush();
    hub.onAck('n1', 1);
    hub.onStarted('n1', [{ uid: wireUid('run', 1), pid: 1 }]);
    fx.take();
    // a new incarnation: 'run' still runs, 'done' ended while no one listened, 'gone' unknown
    hello(
      'n1',
      'b',
      [wireUid('run', 1)],
      [{ ev: 'exited', uid: wireUid('done', 1), exitCode: 0, signal: null }],
    );
    const calls = fx.take();
    expect(calls.filter((c) => c[0] === 'started')).toEqual([]); // 'run' was already started
    expect(calls.filter((c) => c[0] === 'exited')).toEqual([
      ['exited', [{ uid: 'done', exitCode: 0, signal: null }]],
    ]);
    const failed = calls.filter((c) => c[0] === 'failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]![1]).toEqual([
      { uid: 'gone', code: SUBAGENT_LOST, message: expect.stringContaining("'n1'") },
    ]);
    expect(hub.jobsOn('n1')).toEqual(['run']);
  });

  it('resends unacked ops to a sub-agent that comes back, without what it already holds', () => {
    hello('n1', 'a');
    hub.spawn('n1', spec('x'), 1);
    hub.spawn('n1', spec('y'), 1);
    hub.flush();
    hub.kill('x', 'SIGTERM');
    hub.flush();
    fx.take();
    // never acked; x got to a helper, y did not
    hello('n1', 'b', [wireUid('x', 1)]);
    const sends = fx.take().filter((c) => c[0] === 'send');
    expect(sends.map((c) => c[2])).toEqual([
      { seq: 1, spawn: [expect.objectContaining({ uid: wireUid('y', 1) })], kill: [] },
      { seq: 2, spawn: [], kill: [{ uid: wireUid('x', 1), signal: 'SIGTERM' }] },
    ]);
    hub.onAck('n1', 2);
    hello('n1', 'c', [wireUid('x', 1), wireUid('y', 1)]);
    expect(fx.take().filter((c) => c[0] === 'send')).toEqual([]);
  });

  it('an end kept from an earlier attempt is never taken for the current one', () => {
    hello('n1', 'a');
    hub.spawn('n1', spec('t'), 2);
    hub.flush();
    hub.onAck('n1', 1);
    fx.take();
    hello(
      'n1',
      'b',
      [wireUid('t', 2)],
      [{ ev: 'exited', uid: wireUid('t', 1), exitCode: 0, signal: null }],
    );
    const calls = fx.take();
    expect(calls.filter((c) => c[0] === 'exited')).toEqual([]);
    expect(calls.filter((c) => c[0] === 'started')).toEqual([
      ['started', [{ uid: 't', pid: 100 }]],
    ]);
  });

  it('says a silent sub-agent with since when, and again when it is heard', () => {
    hello('n1', 'a');
    hello('n2', 'a');
    const heardAt = clock.now();
    fx.take();
    clock.advance(2_000);
    hub.onBeat('n2');
    clock.advance(2_000);
    expect(fx.take()).toEqual([['silent', [{ part: 'sub-agent n1', since: heardAt }]]]);
    hub.onBeat('n1');
    expect(fx.take()).toEqual([['silent', []]]);
  });

  it('a lost sub-agent fails its jobs, is started again, and its node is given up after the restarts', () => {
    hello('n1', 'a');
    hub.spawn('n1', spec('t'), 1);
    hub.flush();
    fx.take();
    hub.onLauncherEnded('n1', 'srun exited 1');
    const calls = fx.take();
    expect(calls.find((c) => c[0] === 'failed')).toEqual([
      'failed',
      [{ uid: 't', code: SUBAGENT_LOST, message: "the sub-agent on 'n1' ended (srun exited 1)" }],
    ]);
    expect(calls.filter((c) => c[0] === 'startSubAgent')).toEqual([['startSubAgent', 'n1']]);
    hub.onLauncherEnded('n1', 'srun exited 1');
    fx.take();
    hub.onLauncherEnded('n1', 'srun exited 1');
    const last = fx.take();
    expect(last.filter((c) => c[0] === 'startSubAgent')).toEqual([]);
    expect(last.find((c) => c[0] === 'nodeLost')?.[2]).toContain('given up');
    expect(hub.serves('n1')).toBe(false);
    hub.spawn('n1', spec('u'), 1);
    expect(fx.take()).toEqual([
      ['failed', [{ uid: 'u', code: SUBAGENT_LOST, message: "node 'n1' lost its sub-agent" }]],
    ]);
  });

  it('a sub-agent never heard within the limit is lost like one that went silent', () => {
    fx.take();
    clock.advance(30_000);
    const calls = fx.take();
    expect(
      calls
        .filter((c) => c[0] === 'startSubAgent')
        .map((c) => c[1])
        .sort(),
    ).toEqual(['n1', 'n2']);
  });

  it('an agent started again accounts for the jobs the one before it gave: running, ended, never had', () => {
    const again = new SubAgentHubCore(fx, clock, OPTS);
    const job = (node: string, uid: string, attempt = 1) => ({
      node,
      uid,
      attempt,
      spec: { ...spec(uid), after: 'x' },
    });
    again.adopt([
      job('n1', 'runs'),
      job('n1', 'ended', 2),
      job('n1', 'never-had'),
      job('n2', 'elsewhere'),
      job('n9', 'no-such-node'),
    ]);
    again.onStart();
    fx.take();
    const exit = { ev: 'exited', uid: wireUid('ended', 2), exitCode: 0, signal: null };
    // an end kept from an earlier attempt of a task is not taken for this one
    const stale = { ev: 'exited', uid: wireUid('runs', 0), exitCode: 9, signal: null };
    again.onHello('n1', {
      incarnation: 'x',
      running: [{ uid: wireUid('runs', 1), pid: 7 }],
      ended: [exit, stale] as never,
    });
    const calls = fx.take();
    // already started as the Executor knows: no second start
    expect(calls.filter((c) => c[0] === 'started')).toEqual([]);
    expect(calls.find((c) => c[0] === 'exited')).toEqual([
      'exited',
      [{ uid: 'ended', exitCode: 0, signal: null }],
    ]);
    // the agent before died before its sub-agent had it: it never ran, so it is sent now
    expect(calls.filter((c) => c[0] === 'failed')).toEqual([]);
    expect(calls.filter((c) => c[0] === 'send')).toEqual([
      ['send', 'n1', { seq: 1, spawn: [{ ...spec(wireUid('never-had', 1)) }], kill: [] }],
    ]);
    expect(again.jobsOn('n1')).toEqual(['runs', 'never-had']);
    expect(again.jobsOn('n2')).toEqual(['elsewhere']);
    // the one still running is the new agent's to signal, and ends once
    expect(again.kill('runs', 'SIGTERM')).toBe(true);
    again.flush();
    expect(fx.take()).toEqual([
      ['send', 'n1', { seq: 2, spawn: [], kill: [{ uid: wireUid('runs', 1), signal: 'SIGTERM' }] }],
    ]);
    // a second hello (the same sub-agent, reconnected) without the one sent: that is lost now
    again.onHello('n1', {
      incarnation: 'x',
      running: [{ uid: wireUid('runs', 1), pid: 7 }],
      ended: [],
    });
    expect(fx.take().find((c) => c[0] === 'failed')).toBeUndefined(); // seq 1 is not acked yet
    again.onAck('n1', 2);
    again.onHello('n1', {
      incarnation: 'x',
      running: [{ uid: wireUid('runs', 1), pid: 7 }],
      ended: [],
    });
    expect(fx.take().find((c) => c[0] === 'failed')?.[1]).toEqual([
      expect.objectContaining({ uid: 'never-had', code: SUBAGENT_LOST }),
    ]);
    const end = { ev: 'exited', uid: wireUid('runs', 1), exitCode: 0, signal: null } as const;
    again.onEnded('n1', [end]);
    again.onEnded('n1', [end]);
    expect(fx.take()).toEqual([['exited', [{ uid: 'runs', exitCode: 0, signal: null }]]]);
    again.stop();
  });

  it('says the longest-silent sub-agents first', () => {
    fx.take();
    const t0 = clock.now();
    hello('n1', 'a');
    hello('n2', 'b');
    clock.advance(1_000);
    hub.onBeat('n1'); // n2 was last heard 1 s before n1
    clock.advance(4_000);
    const silent = fx.take().filter((c) => c[0] === 'silent');
    expect(silent.at(-1)?.[1]).toEqual([
      { part: 'sub-agent n2', since: t0 },
      { part: 'sub-agent n1', since: t0 + 1_000 },
    ]);
  });
});
