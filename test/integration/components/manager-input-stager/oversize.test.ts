import { afterEach, describe, expect, it } from '@jest/globals';
import { ManagerInputStagerShell } from '../../../../src/components/manager-input-stager/shell';
import { withTimeout } from '../../../../src/lib/deferred';
import type { Notification } from '../../../../src/states/notification';
import { MAX_MESSAGE_BYTES } from '../../../../src/transport/frames';
import { QueueReceiver } from '../../../../src/transport/queue';
import { taskRecord } from '../../../support/core-harness';
import { linesLogger } from '../../../support/lines-logger';

describe('ManagerInputStagerShell, a task too large for any message to its agent', () => {
  const closers: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  it('is not dropped silently: logged, FAILED E_TOO_LARGE with its size; the others go', async () => {
    const log = linesLogger();
    const notes: Notification[] = [];
    const shell = new ManagerInputStagerShell(
      log,
      (ns) => notes.push(...ns),
      'tcp://127.0.0.1:0',
      () => undefined,
    );
    closers.push(() => shell.close());
    const address = await shell.addPilot('pilot.0000');
    const agent = new QueueReceiver(address);
    closers.push(() => agent.close());
    const small = taskRecord('small', 'AGENT_STAGING_INPUT_PENDING', { pilot: 'pilot.0000' });
    const huge = taskRecord('huge', 'AGENT_STAGING_INPUT_PENDING', {
      pilot: 'pilot.0000',
      description: { executable: '/bin/echo', arguments: ['x'.repeat(MAX_MESSAGE_BYTES)] },
    });
    shell.forwardToPilot('pilot.0000', [small, huge]);
    const got = await withTimeout(
      (async () => {
        for await (const m of agent.messages()) return m.ok ? m.value : m.error;
        return undefined;
      })(),
      10_000,
      'the small task at the agent',
    );
    expect((got as { uid: string }[]).map((t) => t.uid)).toEqual(['small']);
    expect(notes).toEqual([
      expect.objectContaining({ uid: 'huge', state: 'FAILED', component: 'TaskManager' }),
    ]);
    expect(notes[0]!.detail?.reason).toMatchObject({
      code: 'E_TOO_LARGE',
      message: expect.stringMatching(/^the task is \d+ bytes encoded, over the 67108864 bytes/),
    });
    expect(log.lines.filter((l) => l[0] === 'error').map((l) => l[1])).toEqual([
      'task too large for a message to its agent',
    ]);
    // it is no longer the agent's: nothing it says of it is taken
    expect([shell.owns('pilot.0000', 'small'), shell.owns('pilot.0000', 'huge')]).toEqual([
      true,
      false,
    ]);
    expect(shell.unreturned('pilot.0000').map((g) => g.uid)).toEqual(['small']);
  }, 30_000);
});
