import { afterEach, describe, expect, it } from '@jest/globals';
import type { Notification, TaskRecord } from '../../../src/generated';
import { AGENT_HOPS, AgentTaskQueues, type AgentIntake } from '../../../src/agent/task-queues';
import { QueueSet } from '../../../src/components/shared/queue-set';
import { silentLogger } from '../../../src/lib/logger';
import { Bridge } from '../../../src/transport/bridge';
import { QueueSender } from '../../../src/transport/queue';
import { taskIn } from '../../support/fixtures';

describe("the agent's task queues, from the pipeline table", () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  it('are the four agent components, in order, each with its X_PENDING', () => {
    expect(AGENT_HOPS.map((h) => `${h.component} ${h.arrives} ${h.takes}`)).toEqual([
      'AgentInputStager AGENT_STAGING_INPUT_PENDING AGENT_STAGING_INPUT',
      'AgentScheduler AGENT_SCHEDULING_PENDING AGENT_SCHEDULING',
      'Executor AGENT_EXECUTING_PENDING AGENT_EXECUTING',
      'AgentOutputStager AGENT_STAGING_OUTPUT_PENDING AGENT_STAGING_OUTPUT',
    ]);
  });

  it("take from the client's bridge first, then locally, each accepting only its arrival state", async () => {
    const bridge = await Bridge.queue();
    const queues = new QueueSet();
    closers.push(
      () => bridge.close(),
      () => queues.close(),
    );
    const hops = new AgentTaskQueues(queues, silentLogger);
    const seen: string[] = [];
    const notes: Notification[] = [];
    const intakes: Record<string, AgentIntake> = {};
    const arrived = new Promise<void>((resolve) => {
      for (const hop of AGENT_HOPS) {
        intakes[hop.component] = {
          handle: (ts: TaskRecord[]) => {
            seen.push(...ts.map((t) => `${hop.component} ${t.uid}`));
            if (hop.component === 'AgentInputStager') resolve();
          },
          log: silentLogger,
        };
      }
    });
    hops.connect(
      { address: bridge.endpoints.out, admit: () => undefined },
      intakes,
      (ns) => notes.push(...ns),
      () => 42,
    );
    await hops
      .into('Executor')
      .send([
        taskIn('AGENT_EXECUTING_PENDING', { uid: 'ok' }),
        taskIn('AGENT_SCHEDULING_PENDING', { uid: 'wrong' }),
      ]);
    const client = new QueueSender(bridge.endpoints.in);
    closers.push(() => client.close());
    await client.send([taskIn('AGENT_STAGING_INPUT_PENDING', { uid: 'in', pilot: 'p' })]);
    await arrived;
    expect(seen).toEqual(['Executor ok', 'AgentInputStager in']);
    expect(notes).toEqual([
      expect.objectContaining({ uid: 'wrong', state: 'FAILED', component: 'Executor', ts: 42 }),
    ]);
    expect(JSON.stringify(notes[0]!.detail)).toContain(
      'must be AGENT_EXECUTING_PENDING here, not AGENT_SCHEDULING_PENDING',
    );
  });

  it('have no local queue into the first hop: the client feeds it', () => {
    const hops = new AgentTaskQueues(new QueueSet(), silentLogger);
    expect(() => hops.into('AgentInputStager')).toThrow(/no local queue into AgentInputStager/);
  });
});
