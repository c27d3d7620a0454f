import { describe, expect, it } from '@jest/globals';
import {
  AgentSchedulerCore,
  type NodeResources,
} from '../../../../src/components/agent-scheduler/core';
import { releasedOf } from '../../../../src/components/agent-scheduler/dead-services';
import type { Reason, TaskDescription, TaskRecord } from '../../../../src/generated';
import { CoreHarness, taskRecord } from '../../../support/core-harness';

const node: NodeResources = { name: 'n0', cores: 2, gpus: 0, memMb: 8_192 };

/** A 2-core scheduler that records what it gives back. */
function setup() {
  const h = new CoreHarness();
  const returned: { uids: string[]; why: Reason }[] = [];
  const returnTasks = (ts: TaskRecord[], why: Reason): void => {
    returned.push({ uids: ts.map((t) => t.uid), why });
    h.rec.record(`return ${ts.map((t) => t.uid).join(', ')}`);
  };
  const core = new AgentSchedulerCore(h.effects({ returnTasks }), h.clock, [node]);
  return Object.assign(h, { core, returned });
}

const pending = (uid: string, over: Partial<TaskRecord> = {}, d: Partial<TaskDescription> = {}) =>
  taskRecord(uid, 'AGENT_SCHEDULING_PENDING', {
    ...over,
    description: { executable: '/bin/true', ...d },
  });

/** The service `web`, attempt `attempt`, as the Executor lets it go once its process ended. */
function endedService(attempt: number, over: Partial<TaskRecord> = {}): TaskRecord {
  return {
    ...pending('web', {
      attempt,
      endpoint: '127.0.0.1:9',
      exitCode: null,
      signal: 'SIGKILL',
      ...over,
    }),
    description: { mode: 'service', executable: 'srv', retries: 1, service: { port: 'auto' } },
  };
}

/** A dependent let go by attempt 1 of `web`. */
const dependent = (uid: string) => pending(uid, { readyOf: { web: 1 } });

describe('AgentSchedulerCore: tasks a dead service let go', () => {
  it('ends the waiting ones CANCELED E_DEPENDENCY before its slot is offered, when no attempt follows', () => {
    const s = setup();
    s.core.onTasks([pending('web', {}, { mode: 'service' }), pending('blocker')]);
    s.core.onTasks([dependent('d1'), pending('plain')]);
    s.rec.take();
    s.core.onReleased([releasedOf(endedService(1, { retried: 1 }))]);
    // d1 never gets the core web had; the task not let go by it does
    expect(s.rec.take()).toEqual([
      'notify d1 CANCELED, plain AGENT_EXECUTING_PENDING',
      'forward plain',
    ]);
    const why = s.notes.find((n) => n.uid === 'd1' && n.state === 'CANCELED')!.detail!.reason!;
    expect(why).toMatchObject({ code: 'E_DEPENDENCY', component: 'AgentScheduler' });
    expect(why.message).toContain('dependency web (attempt 1)');
    // one that arrives later (in transit meanwhile) is ended on receipt
    s.core.onTasks([dependent('late')]);
    expect(s.rec.take()).toEqual(['notify late AGENT_SCHEDULING, late CANCELED']);
    s.expectNoMore();
  });

  it('gives them back to wait for the next attempt when the service has retries left; those of the next attempt wait on', () => {
    const s = setup();
    s.core.onTasks([pending('web', {}, { mode: 'service' }), pending('blocker')]);
    s.core.onTasks([dependent('d1'), dependent('d2')]);
    s.rec.take();
    s.core.onReleased([releasedOf(endedService(1))]);
    expect(s.rec.take()).toEqual(['return d1', 'return d2']);
    expect(s.returned[0]!.why.detail).toEqual({ dependency: 'web', on: 'ready', attempt: 1 });
    s.core.onTasks([pending('d3', { readyOf: { web: 2 } })]);
    expect(s.rec.take()).toEqual([
      'notify d3 AGENT_SCHEDULING, d3 AGENT_EXECUTING_PENDING',
      'forward d3',
    ]);
    s.expectNoMore();
  });

  it('withdraws what waits here when told of a service that ran elsewhere (service_gone)', () => {
    const s = setup();
    s.core.onTasks([pending('b1'), pending('b2')]);
    s.core.onTasks([dependent('d1'), pending('mine', { readyOf: { web: 2 } })]);
    s.rec.take();
    s.core.onServiceGone('web', { attempt: 1, retry: false });
    expect(s.rec.take()).toEqual(['notify d1 CANCELED']);
    s.core.onServiceGone('web', { attempt: 1, retry: false }); // told twice: nothing more
    s.expectNoMore();
  });

  it('withdraws nothing for a service that was never ready, or ended DONE after a cancel', () => {
    const neverReady = endedService(1);
    delete neverReady.endpoint;
    expect(releasedOf(neverReady)).toEqual({ uid: 'web' });
    expect(releasedOf(endedService(1, { stopped: true })).service).toEqual({
      attempt: 1,
      retry: false,
    });
    expect(releasedOf(endedService(1, { exitCode: 0, signal: null })).service!.retry).toBe(false);
    expect(releasedOf(endedService(1)).service!.retry).toBe(true);
    const noRetry = { code: 'E_EXEC_NOT_FOUND' as const, message: 'x', component: 'Executor' };
    expect(releasedOf(endedService(1, { reason: noRetry })).service!.retry).toBe(false);
  });
});
