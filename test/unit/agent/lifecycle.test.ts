import { describe, expect, it } from '@jest/globals';
import {
  AgentLifecycleCore,
  AGENT_HEARTBEAT_MS,
  SHUTDOWN_ORDER,
  STALL_RECHECK_MS,
  type AgentLifecycleOptions,
} from '../../../src/agent/lifecycle/core';
import type { AgentLifecycleEffects, ShutdownStep } from '../../../src/agent/lifecycle/effects';
import { CoreHarness } from '../../support/core-harness';

/** Fake effects: each step is recorded and reports done at once, unless held. */
function setup(opts: Partial<AgentLifecycleOptions> = {}, held: ShutdownStep[] = []) {
  const h = new CoreHarness();
  const { rec } = h;
  const step = (name: ShutdownStep, line: string = name): void => {
    rec.record(line);
    if (!held.includes(name)) core.onStepDone(name);
  };
  // heartbeats are counted apart: every test with a ready control bus would see them
  const beats: number[] = [];
  const effects: AgentLifecycleEffects = {
    publishHeartbeat: () => beats.push(h.clock.now()),
    shuttingDown: (s) =>
      rec.record(`shuttingDown ${s.final} '${s.message}'${s.storeGone ? ' storeGone' : ''}`),
    stopReceiving: () => step('stopReceiving'),
    finalizeTasks: (final, why, leaveToClient) =>
      step(
        'finalizeTasks',
        `finalizeTasks ${final} ${why.code} '${why.message}'${leaveToClient ? ' leaveToClient' : ''}`,
      ),
    drain: (signal) => rec.record(`drain ${signal ?? '-'}`),
    endSummary: () => 'SUMMARY',
    closeSpawners: () => step('closeSpawners'),
    flushNotifications: () => step('flushNotifications'),
    closeSenders: () => step('closeSenders'),
    awaitUpdates: () => step('awaitUpdates'),
    closeWorkers: (ms) => step('closeWorkers', `closeWorkers ${ms ?? 'default'}`),
    closeQueues: () => step('closeQueues'),
    publishFinal: (final, message) => step('publishFinal', `publishFinal ${final} '${message}'`),
    closeControl: () => step('closeControl'),
    finished: (final, message) => rec.record(`finished ${final} '${message}'`),
  };
  const core = new AgentLifecycleCore(effects, h.clock, {
    pilot: 'pilot.1',
    heartbeatTimeoutMs: 600,
    runtimeMin: 5,
    ...opts,
  });
  return Object.assign(h, { core, beats });
}

/** The recorded lines of a whole shutdown. */
function shutdownLines(
  final: string,
  message: string,
  opts: { storeGone?: boolean; taskFinal?: string; code?: string; timeUp?: boolean } = {},
): string[] {
  return [
    ...(opts.timeUp === true ? ['drain -'] : []),
    `shuttingDown ${final} '${message}'${opts.storeGone === true ? ' storeGone' : ''}`,
    'stopReceiving',
    `finalizeTasks ${opts.taskFinal ?? 'FAILED'} ${opts.code ?? 'E_PILOT_ENDED'} 'pilot pilot.1 ended before the task finished: ${message}'${opts.timeUp === true ? ' leaveToClient' : ''}`,
    'closeSpawners',
    'flushNotifications',
    'closeSenders',
    'awaitUpdates',
    `closeWorkers ${opts.storeGone === true ? 200 : 'default'}`,
    'closeQueues',
    `publishFinal ${final} '${message}'`,
    'closeControl',
    `finished ${final} '${message}'`,
  ];
}

describe('AgentLifecycleCore: its own heartbeats', () => {
  it('tells the client it is alive every AGENT_HEARTBEAT_MS from control ready to shutdown', () => {
    const { clock, core, beats } = setup({ heartbeatTimeoutMs: 0 });
    core.onStart();
    clock.advance(5_000);
    expect(beats).toEqual([]);
    const t0 = clock.now();
    core.onControlReady();
    clock.advance(3 * AGENT_HEARTBEAT_MS);
    expect(beats.map((t) => t - t0)).toEqual([0, 1, 2, 3].map((i) => i * AGENT_HEARTBEAT_MS));
    core.onShutdownRequested('CANCELED', 'bye');
    clock.advance(10 * AGENT_HEARTBEAT_MS);
    expect(beats).toHaveLength(4);
  });
});

describe('AgentLifecycleCore: the client heartbeat watchdog', () => {
  it('shuts down FAILED with the store gone once the silence reaches the timeout, not before', () => {
    const { rec, clock, core } = setup();
    core.onStart();
    clock.advance(599);
    rec.expectNoMore();
    clock.advance(1);
    expect(rec.take()).toEqual(
      shutdownLines('FAILED', 'lost the client: no heartbeat for 1 s', { storeGone: true }),
    );
    expect(core.stopping).toBe(true);
  });

  it("works on past the timeout for the pilot's longer grace, counted from the client's last word, then names it", () => {
    const { rec, clock, core } = setup({ heartbeatTimeoutMs: 30_000, clientGraceMs: 900_000 });
    core.onStart();
    clock.advance(400_000);
    core.onHeartbeat(); // a client back within the grace: the silence counts afresh
    clock.advance(899_999);
    rec.expectNoMore();
    clock.advance(1);
    expect(rec.take()[0]).toBe(
      "shuttingDown FAILED 'lost the client: no heartbeat for 900 s (the pilot's agent.clientGraceS)' storeGone",
    );
  });

  it('a grace shorter than the timeout is the timeout', () => {
    const { rec, clock, core } = setup({ heartbeatTimeoutMs: 600, clientGraceMs: 100 });
    core.onStart();
    clock.advance(599);
    rec.expectNoMore();
    clock.advance(1);
    expect(rec.take()[0]).toBe(
      "shuttingDown FAILED 'lost the client: no heartbeat for 1 s' storeGone",
    );
  });

  it('counts the silence from the start, before the control bus is ready', () => {
    const { rec, clock, core } = setup({ heartbeatTimeoutMs: 30_000 });
    clock.advance(10_000); // constructed long before start: no silence counted yet
    core.onStart();
    clock.advance(29_999);
    rec.expectNoMore();
    clock.advance(1);
    expect(rec.take()[0]).toBe(
      "shuttingDown FAILED 'lost the client: no heartbeat for 30 s' storeGone",
    );
  });

  it('is reset by every heartbeat', () => {
    const { rec, clock, core } = setup();
    core.onStart();
    for (let i = 0; i < 10; i++) {
      clock.advance(500);
      core.onHeartbeat();
    }
    clock.advance(599);
    rec.expectNoMore();
    clock.advance(1);
    expect(rec.take()[0]).toBe(
      "shuttingDown FAILED 'lost the client: no heartbeat for 1 s' storeGone",
    );
  });

  it('after a stall of its own process, reads the heartbeats that waited before judging', () => {
    const { rec, clock, core } = setup({ heartbeatTimeoutMs: 30_000 });
    core.onStart();
    clock.stall(100_000); // SIGSTOP, then SIGCONT: the timer fires 70 s late
    rec.expectNoMore();
    core.onHeartbeat(); // the client was alive all along: its heartbeats are read now
    clock.advance(STALL_RECHECK_MS);
    rec.expectNoMore();
    clock.advance(29_999 - STALL_RECHECK_MS);
    rec.expectNoMore();
    clock.advance(1);
    expect(rec.take()[0]).toBe(
      "shuttingDown FAILED 'lost the client: no heartbeat for 30 s' storeGone",
    );
  });

  it('after a stall, gives up on a client whose heartbeats did not come', () => {
    const { rec, clock, core } = setup({ heartbeatTimeoutMs: 30_000 });
    core.onStart();
    clock.stall(100_000);
    rec.expectNoMore();
    clock.advance(STALL_RECHECK_MS);
    expect(rec.take()[0]).toBe(
      "shuttingDown FAILED 'lost the client: no heartbeat for 101 s' storeGone",
    );
  });

  it('keeps a single timer however many heartbeats come', () => {
    const { clock, core } = setup();
    core.onStart();
    for (let i = 0; i < 100; i++) core.onHeartbeat();
    expect(clock.pending()).toBe(1);
  });

  it('never fires with a timeout of 0', () => {
    const { rec, clock, core } = setup({ heartbeatTimeoutMs: 0 });
    core.onStart();
    expect(clock.pending()).toBe(0);
    clock.advance(3_600_000);
    rec.expectNoMore();
  });
});

describe('AgentLifecycleCore: the runtime limit', () => {
  it('shuts down DONE runtimeMin after the control bus is ready, not before', () => {
    const { rec, clock, core } = setup({ heartbeatTimeoutMs: 0, runtimeMin: 2 });
    core.onStart();
    clock.advance(5_000); // joining the control bus does not count
    core.onControlReady();
    clock.advance(119_999);
    rec.expectNoMore();
    clock.advance(1);
    expect(rec.take()).toEqual(
      shutdownLines('DONE', 'runtime limit of 2 min reached; SUMMARY', { timeUp: true }),
    );
  });

  it('drains signalBeforeEnd.seconds before the end: the signal, then the end', () => {
    const { rec, clock, core } = setup({
      heartbeatTimeoutMs: 0,
      runtimeMin: 2,
      signalBeforeEnd: { signal: 'SIGUSR1', seconds: 30 },
    });
    core.onStart();
    core.onControlReady();
    expect(core.drainInMs()).toBe(90_000);
    clock.advance(89_999);
    rec.expectNoMore();
    clock.advance(1);
    expect(rec.take()).toEqual(['drain SIGUSR1']);
    expect(core.drainInMs()).toBe(0);
    clock.advance(30_000);
    expect(rec.take()).toEqual(
      shutdownLines('DONE', 'runtime limit of 2 min reached; SUMMARY', { timeUp: true }),
    );
  });

  it("ends at the batch job's end when that comes before runtimeMin", () => {
    const { rec, clock, core } = setup({ heartbeatTimeoutMs: 0, runtimeMin: 60 });
    const jobEndsAt = clock.now() + 45_000;
    const early = setup({ heartbeatTimeoutMs: 0, runtimeMin: 60 });
    early.core.onStart();
    early.core.setJobEnd(jobEndsAt);
    early.core.onControlReady();
    expect(early.core.drainInMs()).toBe(45_000);
    early.clock.advance(45_000);
    expect(early.rec.take()[1]).toBe(
      `shuttingDown DONE 'the batch job's end is near (${new Date(jobEndsAt).toISOString()}); SUMMARY'`,
    );
    core.onStart();
    core.onControlReady();
    expect(core.drainInMs()).toBe(3_600_000);
    clock.advance(45_000);
    rec.expectNoMore();
  });

  it('is not cut short by a client that keeps beating', () => {
    const { rec, clock, core } = setup({ heartbeatTimeoutMs: 600, runtimeMin: 1 });
    core.onStart();
    core.onControlReady();
    for (let t = 0; t < 59_500; t += 500) {
      clock.advance(500);
      core.onHeartbeat();
    }
    rec.expectNoMore();
    clock.advance(500);
    expect(rec.take()[1]).toBe("shuttingDown DONE 'runtime limit of 1 min reached; SUMMARY'");
  });
});

describe('AgentLifecycleCore: shutdown requests', () => {
  it("takes the client's shutdown_agent for its own pilot only, with the client's words", () => {
    const { rec, core } = setup();
    core.onClientShutdown({ pilot: 'pilot.2', final: 'CANCELED' });
    rec.expectNoMore();
    core.onClientShutdown({ pilot: 'pilot.1', final: 'CANCELED', message: 'user said so' });
    expect(rec.take()).toEqual(
      shutdownLines('CANCELED', 'user said so', { taskFinal: 'CANCELED', code: 'E_CANCELED' }),
    );
  });

  it('names the client when its shutdown_agent gives no message', () => {
    const { rec, core } = setup();
    core.onClientShutdown({ pilot: 'pilot.1', final: 'DONE' });
    expect(rec.take()[0]).toBe("shuttingDown DONE 'pilot done by the client'");
  });

  it('shuts down FAILED when the agent fails to start', () => {
    const { rec, core } = setup();
    core.onStartFailed('EADDRINUSE');
    expect(rec.take()).toEqual(shutdownLines('FAILED', 'agent failed to start: EADDRINUSE'));
  });

  it('shuts down once: the first cause wins and the timers stop', () => {
    const { rec, clock, core } = setup({ runtimeMin: 1 }, ['closeSpawners']);
    core.onStart();
    core.onControlReady();
    core.onShutdownRequested('CANCELED', 'agent received SIGTERM');
    expect(clock.pending()).toBe(0);
    core.onShutdownRequested('FAILED', 'agent received SIGINT');
    core.onClientShutdown({ pilot: 'pilot.1', final: 'DONE' });
    core.onStartFailed('late');
    clock.advance(120_000);
    core.onStart();
    core.onControlReady();
    expect(clock.pending()).toBe(0);
    expect(rec.take()).toEqual(
      shutdownLines('CANCELED', 'agent received SIGTERM', {
        taskFinal: 'CANCELED',
        code: 'E_CANCELED',
      }).slice(0, 4),
    );
  });
});

describe('AgentLifecycleCore: the shutdown order', () => {
  it('runs every step in order, each only once the one before it is done', () => {
    const { rec, core } = setup({}, [...SHUTDOWN_ORDER]);
    core.onShutdownRequested('DONE', 'bye');
    const lines = shutdownLines('DONE', 'bye');
    expect(rec.take()).toEqual(lines.slice(0, 2));
    for (let i = 0; i < SHUTDOWN_ORDER.length; i++) {
      core.onStepDone(SHUTDOWN_ORDER[i]!);
      expect(rec.take()).toEqual([lines[i + 2]]);
    }
    rec.expectNoMore();
  });

  it('ignores reports of a step that is not under way', () => {
    const { rec, core } = setup({}, ['closeSenders']);
    core.onStepDone('stopReceiving'); // no shutdown yet
    core.onShutdownRequested('DONE', 'bye');
    expect(rec.take()).toEqual(shutdownLines('DONE', 'bye').slice(0, 6));
    core.onStepDone('closeQueues');
    core.onStepDone('stopReceiving');
    rec.expectNoMore();
    core.onStepDone('closeSenders');
    expect(rec.take()).toEqual(shutdownLines('DONE', 'bye').slice(6));
    core.onStepDone('closeControl');
    rec.expectNoMore();
  });
});

describe('AgentLifecycleCore: the bounded wait for the UpdateWorkers', () => {
  it('goes on after 2 s when the workers have not pulled everything', () => {
    const { rec, clock, core } = setup({}, ['awaitUpdates']);
    core.onShutdownRequested('DONE', 'bye');
    expect(rec.take()).toEqual(shutdownLines('DONE', 'bye').slice(0, 7));
    clock.advance(1_999);
    rec.expectNoMore();
    clock.advance(1);
    expect(rec.take()).toEqual(shutdownLines('DONE', 'bye').slice(7));
  });

  it('waits 200 ms only when the store is gone', () => {
    const { rec, clock, core } = setup({}, ['awaitUpdates']);
    core.onStart();
    clock.advance(600);
    const all = shutdownLines('FAILED', 'lost the client: no heartbeat for 1 s', {
      storeGone: true,
    });
    expect(rec.take()).toEqual(all.slice(0, 7));
    clock.advance(199);
    rec.expectNoMore();
    clock.advance(1);
    expect(rec.take()).toEqual(all.slice(7));
  });

  it('goes on as soon as the workers report, and a late report changes nothing', () => {
    const { rec, clock, core } = setup({}, ['awaitUpdates']);
    core.onShutdownRequested('DONE', 'bye');
    rec.take();
    clock.advance(50);
    core.onStepDone('awaitUpdates');
    expect(rec.take()).toEqual(shutdownLines('DONE', 'bye').slice(7));
    expect(clock.pending()).toBe(0);
    clock.advance(5_000);
    core.onStepDone('awaitUpdates');
    rec.expectNoMore();
  });
});
