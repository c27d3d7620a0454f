import { describe, expect, it } from '@jest/globals';
import { serviceKind } from '../../../../../src/components/executor/kinds/service';
import type { LaunchOptions } from '../../../../../src/components/executor/launch';
import type { TaskRecord } from '../../../../../src/generated';
import { slot } from '../launch/helpers';

/** A service task s1 on pilot.1 whose one rank is on `node`. */
function serviceTask(node: string): TaskRecord {
  return {
    uid: 's1',
    attempt: 1,
    state: 'AGENT_EXECUTING_PENDING',
    session: 'sess.1',
    pilot: 'pilot.1',
    sandbox: '/sb/s1',
    slots: [slot(node, [0])],
    description: { executable: '/bin/srv', service: { port: 'auto', ready: { http: '/health' } } },
  };
}

/** The host its readiness is probed at and its endpoint names. */
function hostOf(node: string, launch: Partial<LaunchOptions>): string | undefined {
  const opts: LaunchOptions = { mpirun: 'mpirun', asRoot: false, ...launch };
  const r = serviceKind.prepare(serviceTask(node), '/sb/s1', opts);
  return r.ok && r.job.kind === 'service' ? r.job.host : undefined;
}

describe('serviceKind: where a service is reached', () => {
  const allocation: Partial<LaunchOptions> = {
    agentNode: { name: 'n1', host: 'login-visible.n1' },
    srun: { executable: 'srun' },
    nodeHosts: new Map([['n2', '10.0.0.2']]),
  };

  it('is loopback on one machine', () => {
    expect(hostOf('localhost', {})).toBe('127.0.0.1');
  });

  it("is the agent's service host on its node, another node's address on that node", () => {
    expect(hostOf('n1', allocation)).toBe('login-visible.n1');
    expect(hostOf('n2', allocation)).toBe('10.0.0.2');
  });

  it("is a node's name where the allocation gave no address for it", () => {
    expect(hostOf('n3', allocation)).toBe('n3');
  });
});
