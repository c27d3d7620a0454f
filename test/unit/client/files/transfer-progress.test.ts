import { describe, expect, it } from '@jest/globals';
import type { StagingDirective } from '../../../../src/generated';
import {
  TransferTracker,
  type TransferProgress,
  type TransferSubject,
} from '../../../../src/client/files/transfer-progress';

const P = 'pilot.0000';
const T = 'task.000001';
const at = (now: number) => ({ pilot: P, task: T, now });
const err = { code: 'E_TRANSFER', message: 'boom' };

/** A task with transfer directives in and out, and a copy between them (not a transfer). */
function subject(attempt = 1): TransferSubject {
  const transfer = (source: string, target: string): StagingDirective => ({
    source,
    target,
    action: 'transfer',
  });
  return {
    attempt,
    description: {
      inputStaging: [
        { source: 'client://in.dat', target: 'task://', action: 'transfer' },
        { source: 'client://cp.dat', target: 'task://' },
        { source: 'client:///abs//in.dat', target: 'task://again.dat', action: 'transfer' },
      ],
      outputStaging: [{ source: 'task://out.dat', target: 'client://res/', action: 'transfer' }],
    },
    staging: {
      input: [
        transfer('/home/u/in.dat', 'task://'),
        { source: '/home/u/cp.dat', target: 'task://', action: 'copy' },
        // a second directive of the same client file (written another way)
        transfer('/home/u/in.dat', 'task://again.dat'),
      ],
      output: [transfer('task://out.dat', '/home/u/res/')],
    },
  };
}

const brief = (e: TransferProgress | undefined) =>
  e === undefined ? undefined : [e.phase, e.direction, e.index, e.bytesDone, e.bytesTotal];

describe('TransferTracker', () => {
  it('names the directive as written, the attempt and the pilot', () => {
    const t = new TransferTracker();
    t.expect(P, T, subject(3));
    expect(t.opened('k1', at(0), 'in', '/home/u/in.dat', 100)).toEqual({
      task: T,
      attempt: 3,
      pilot: P,
      direction: 'in',
      index: 0,
      source: 'client://in.dat',
      target: 'task://',
      phase: 'start',
      bytesDone: 0,
      bytesTotal: 100,
    });
    expect(t.opened('k2', at(0), 'out', '/home/u/res', 7)).toMatchObject({
      direction: 'out',
      index: 0,
      source: 'task://out.dat',
      target: 'client://res/',
    });
  });

  it('tells a directive of a path named twice by the order transfers open', () => {
    const t = new TransferTracker();
    t.expect(P, T, subject());
    expect(t.opened('k1', at(0), 'in', '/home/u/in.dat', 1)?.index).toBe(0);
    expect(t.opened('k2', at(0), 'in', '/home/u/in.dat', 1)?.index).toBe(2);
    // all claimed: the last of them (never a directive of another path)
    expect(t.opened('k3', at(0), 'in', '/home/u/in.dat', 1)?.index).toBe(2);
    // a new attempt starts afresh
    t.expect(P, T, subject(2));
    expect(t.opened('k4', at(0), 'in', '/home/u/in.dat', 1)).toMatchObject({
      index: 0,
      attempt: 2,
    });
  });

  it('tells nothing of a transfer no directive of a granted task names', () => {
    const t = new TransferTracker();
    expect(t.opened('k1', at(0), 'in', '/home/u/in.dat', 1)).toBeUndefined();
    t.expect(P, T, subject());
    expect(t.opened('k1', at(0), 'in', '/home/u/cp.dat', 1)).toBeUndefined(); // a copy
    expect(t.opened('k1', at(0), 'out', '/home/u/in.dat', 1)).toBeUndefined(); // wrong way
    expect(t.opened('k1', { ...at(0), pilot: 'pilot.0001' }, 'in', '/home/u/in.dat', 1)).toBe(
      undefined,
    );
    expect(t.advanced('k1', 1, 1_000)).toBeUndefined();
    expect(t.ended('k1')).toBeUndefined();
    expect(t.keys()).toEqual([]);
    t.forget(P, T);
    expect(t.opened('k1', at(0), 'in', '/home/u/in.dat', 1)).toBeUndefined();
  });

  it('throttles progress by time, never tells the last chunk twice, and ends at the total', () => {
    const t = new TransferTracker(250);
    t.expect(P, T, subject());
    const seen = [brief(t.opened('k', at(1_000), 'in', '/home/u/in.dat', 1_000))];
    // one chunk of 100 bytes every 100 ms
    for (let i = 1; i <= 10; i++) seen.push(brief(t.advanced('k', i * 100, 1_000 + i * 100)));
    seen.push(brief(t.ended('k')));
    expect(seen.filter((e) => e !== undefined)).toEqual([
      ['start', 'in', 0, 0, 1_000],
      ['progress', 'in', 0, 300, 1_000],
      ['progress', 'in', 0, 600, 1_000],
      ['progress', 'in', 0, 900, 1_000],
      ['done', 'in', 0, 1_000, 1_000],
    ]);
    expect(t.keys()).toEqual([]);
    expect(t.ended('k')).toBeUndefined(); // one end only
  });

  it('ends a transfer that failed or was dropped with the bytes it had, once', () => {
    const t = new TransferTracker();
    t.expect(P, T, subject());
    t.opened('k', at(0), 'out', '/home/u/res', 10);
    t.advanced('k', 4, 1);
    expect(t.failed('k', err)).toMatchObject({
      phase: 'failed',
      bytesDone: 4,
      bytesTotal: 10,
      error: err,
    });
    expect(t.failed('k', err)).toBeUndefined();
    expect(t.ended('k')).toBeUndefined();
  });

  it('tells a transfer that failed to open as failed alone, naming its directive', () => {
    const t = new TransferTracker();
    t.expect(P, T, subject());
    const enoent = { code: 'ENOENT', message: '/home/u/in.dat: no such file or directory' };
    expect(t.openFailed(at(0), 'in', '/home/u/in.dat', enoent)).toMatchObject({
      phase: 'failed',
      index: 0,
      bytesDone: 0,
      bytesTotal: 0,
      error: enoent,
    });
    expect(t.keys()).toEqual([]);
    // it claimed its directive: the next transfer of the path is the next directive
    expect(t.opened('k', at(0), 'in', '/home/u/in.dat', 1)?.index).toBe(2);
  });

  it('moves an empty file with a start and a done', () => {
    const t = new TransferTracker();
    t.expect(P, T, subject());
    expect(brief(t.opened('k', at(0), 'in', '/home/u/in.dat', 0))).toEqual([
      'start',
      'in',
      0,
      0,
      0,
    ]);
    expect(brief(t.ended('k'))).toEqual(['done', 'in', 0, 0, 0]);
  });
});
