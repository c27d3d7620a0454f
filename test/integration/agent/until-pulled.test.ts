import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { untilPulled } from '../../../src/agent/until-pulled';
import { silentLogger } from '../../../src/lib/logger';
import { withTimeout } from '../../../src/lib/deferred';
import type { QueueSender } from '../../../src/transport/queue';
import type { Notification } from '../../../src/generated';
import type { UpdateWorker } from '../../../src/updater/update-worker';
import { UpdatePath } from '../updater/helpers';

/** `count` distinct notifications of one state. */
const makeNotes = (count: number): Notification[] =>
  Array.from({ length: count }, (_, i) => ({
    kind: 'task' as const,
    uid: `task.${i}`,
    attempt: 1,
    state: 'AGENT_EXECUTING',
    ts: 1_700_000_000_000 + i,
    component: 'test',
  }));

describe('untilPulled: waiting on the UpdateWorkers without polling', () => {
  let updates: UpdatePath;
  let sender: QueueSender;
  let workers: UpdateWorker[];

  beforeEach(async () => {
    updates = await UpdatePath.open('pf-pulled-', silentLogger);
    ({ sender } = updates);
    workers = updates.start(2);
  });

  afterEach(() => updates.close());

  const until = (count: number): { reached: Promise<void>; was: () => boolean } => {
    let was = false;
    const reached = new Promise<void>((resolve) =>
      untilPulled(workers, count, () => {
        was = true;
        resolve();
      }),
    );
    return { reached, was: () => was };
  };

  it('reports once the competing workers together pulled the count, and not one short', async () => {
    const all = until(301);
    const short = until(300);
    const notes = makeNotes(301);
    for (let i = 0; i < 300; i += 50) await sender.send(notes.slice(i, i + 50));
    await withTimeout(short.reached, 5_000, '300 pulled');
    expect(all.was()).toBe(false);
    await sender.send(notes.slice(300));
    await withTimeout(all.reached, 5_000, '301 pulled');
  });

  it('counts a refused message, so a bad bulk does not hold the wait to its bound', async () => {
    const one = until(1);
    await sender.send({ not: 'a bulk' });
    await withTimeout(one.reached, 5_000, 'refused message pulled');
    expect(workers.reduce((n, w) => n + w.stats().invalid, 0)).toBe(1);
  });

  it('reports at once when everything was pulled already', () => {
    expect(until(0).was()).toBe(true);
  });

  it('stops listening when cancelled', async () => {
    let called = false;
    const cancel = untilPulled(workers, 1, () => (called = true));
    cancel();
    const after = until(1);
    await sender.send(makeNotes(1));
    await withTimeout(after.reached, 5_000, 'pulled');
    expect(called).toBe(false);
  });
});
