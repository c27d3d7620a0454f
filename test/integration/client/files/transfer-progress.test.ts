import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { TaskManager } from '../../../../src/client/task-manager';
import type { TransferProgress } from '../../../../src/client/files/transfer-progress';
import { fixtures } from '../../../support/session-fixture';
import { tempDirs } from '../../../support/temp-dirs';

/** Events by transfer: `in0` is inputStaging[0]'s, `out0` outputStaging[0]'s, and so on. */
function byTransfer(events: TransferProgress[]): Map<string, TransferProgress[]> {
  const out = new Map<string, TransferProgress[]>();
  for (const e of events) {
    const key = `${e.direction}${e.index}`;
    out.set(key, [...(out.get(key) ?? []), e]);
  }
  return out;
}

/** One transfer's events: start at 0, bytes rising, done at the total last. */
function expectWellTold(events: TransferProgress[] | undefined, total: number): void {
  expect(events).toBeDefined();
  const es = events!;
  expect(es[0]).toMatchObject({ phase: 'start', bytesDone: 0, bytesTotal: total });
  expect(es[es.length - 1]).toMatchObject({ phase: 'done', bytesDone: total, bytesTotal: total });
  for (const e of es.slice(1, -1)) expect(e.phase).toBe('progress');
  for (let i = 1; i < es.length; i++) {
    expect(es[i]!.bytesDone).toBeGreaterThan(es[i - 1]!.bytesDone);
  }
}

/** TaskManager.onTransfer on real sessions: a local pilot, its agent, real files both ways. */
describe('transfer progress', () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-tp-');

  it('tells each transfer of a task, in and out, rising to its total, then done', async () => {
    const fx = await fixture.open();
    const d = temp.make();
    // several chunks of the channel's 1 MiB, and not a whole number of them
    const big = Buffer.alloc(6 * 2 ** 20 + 123);
    for (let i = 0; i < big.length; i += 4096) big.writeUInt32LE(i, i);
    fs.writeFileSync(path.join(d, 'in.dat'), big);
    fs.writeFileSync(path.join(d, 'small.txt'), 'small\n');
    const events: TransferProgress[] = [];
    fx.tmgr.onTransfer((e) => events.push(e));
    fx.tmgr.onTransfer(() => {
      throw new Error('a listener that throws changes nothing');
    });
    // another manager of the session hears of its own tasks only
    const other: TransferProgress[] = [];
    new TaskManager(fx.session).onTransfer((e) => other.push(e));

    const inputStaging = [
      { source: `client://${d}/in.dat`, target: 'task://', action: 'transfer' as const },
      { source: `client://${d}/small.txt`, target: 'task://s.txt', action: 'transfer' as const },
    ];
    const outputStaging = [
      { source: 'task://out.dat', target: `client://${d}/out.dat`, action: 'transfer' as const },
    ];
    const [t] = await fx.tmgr.submitTasks([
      {
        executable: '/bin/sh',
        arguments: ['-c', 'cat in.dat s.txt > out.dat'],
        inputStaging,
        outputStaging,
      },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    expect(t!.reason).toBeUndefined();
    expect(t!.state).toBe('DONE');
    expect(fs.readFileSync(path.join(d, 'out.dat')).length).toBe(big.length + 6);

    const told = byTransfer(events);
    expect([...told.keys()].sort()).toEqual(['in0', 'in1', 'out0']);
    expectWellTold(told.get('in0'), big.length);
    expectWellTold(told.get('in1'), 6);
    expectWellTold(told.get('out0'), big.length + 6);
    for (const e of events) {
      expect(e).toMatchObject({ task: t!.uid, attempt: 1, pilot: fx.pilot.uid });
      const written = e.direction === 'in' ? inputStaging[e.index]! : outputStaging[e.index]!;
      expect([e.source, e.target]).toEqual([written.source, written.target]);
    }
    // throttled: a few events per transfer, not one per chunk
    expect(told.get('in0')!.length).toBeLessThanOrEqual(8);
    expect(other).toEqual([]);
  }, 90_000);

  it('names the attempt: a retried task transfers again, as attempt 2', async () => {
    const fx = await fixture.open();
    const d = temp.make();
    fs.writeFileSync(path.join(d, 'in.txt'), 'data\n');
    const flag = path.join(d, 'tried');
    const events: TransferProgress[] = [];
    fx.tmgr.onTransfer((e) => events.push(e));
    const [t] = await fx.tmgr.submitTasks([
      {
        executable: '/bin/sh',
        // fails the first time it runs, succeeds the second
        arguments: ['-c', 'if [ -e "$0" ]; then exit 0; else touch "$0"; exit 7; fi', flag],
        inputStaging: [{ source: `client://${d}/in.txt`, target: 'task://', action: 'transfer' }],
        retries: 1,
      },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    expect(t!.state).toBe('DONE');
    expect(t!.attempt).toBe(2);
    expect(events.map((e) => `${e.attempt} ${e.direction}${e.index} ${e.phase}`)).toEqual([
      '1 in0 start',
      '1 in0 done',
      '2 in0 start',
      '2 in0 done',
    ]);
  }, 90_000);

  it('ends a transfer that cannot be made with failed, naming the directive and errno', async () => {
    const fx = await fixture.open();
    const d = temp.make();
    fs.writeFileSync(path.join(d, 'there.txt'), 'here\n');
    const events: TransferProgress[] = [];
    fx.tmgr.onTransfer((e) => events.push(e));
    const missing = `client://${d}/missing.txt`;
    const [failing, skipping] = await fx.tmgr.submitTasks([
      {
        executable: '/bin/true',
        inputStaging: [{ source: missing, target: 'task://', action: 'transfer' }],
      },
      {
        executable: '/bin/true',
        inputStaging: [
          { source: missing, target: 'task://', action: 'transfer', optional: true },
          { source: `client://${d}/there.txt`, target: 'task://', action: 'transfer' },
        ],
      },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    expect(failing!.state).toBe('FAILED');
    expect(failing!.reason?.code).toBe('E_STAGING');
    expect(skipping!.state).toBe('DONE');

    const of = (uid: string) => events.filter((e) => e.task === uid);
    const enoent = {
      phase: 'failed',
      direction: 'in',
      index: 0,
      source: missing,
      bytesDone: 0,
      bytesTotal: 0,
      error: { code: 'ENOENT', message: expect.stringContaining(`${d}/missing.txt`) },
    };
    expect(of(failing!.uid)).toEqual([expect.objectContaining(enoent)]);
    const rest = byTransfer(of(skipping!.uid));
    expect(rest.get('in0')).toEqual([expect.objectContaining(enoent)]);
    expectWellTold(rest.get('in1'), 5);
  }, 90_000);
});
