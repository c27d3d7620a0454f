/**
 * The pure parts of the Node spawner helper's keep mode: its arguments (master-link.ts), the
 * ring of recent ends and the status line (recent-ends.ts).
 */
import { describe, expect, it } from '@jest/globals';
import { keepArgs } from '../../../../../../src/components/executor/process/helper/master-link';
import {
  RECENT_MAX,
  RecentEnds,
  statusLine,
} from '../../../../../../src/components/executor/process/helper/recent-ends';

describe('keepArgs', () => {
  it('takes both or neither', () => {
    expect(keepArgs(undefined, undefined)).toEqual({});
    expect(keepArgs('/run/h.sock', '5000')).toEqual({ keep: { path: '/run/h.sock', ms: 5000 } });
    expect(keepArgs('/run/h.sock', '0')).toEqual({ keep: { path: '/run/h.sock', ms: 0 } });
    for (const [p, ms] of [
      ['/run/h.sock', undefined],
      [undefined, '5000'],
      ['', '5000'],
      ['/run/h.sock', '-1'],
      ['/run/h.sock', '1.5'],
      ['/run/h.sock', 'soon'],
    ] as const) {
      expect(keepArgs(p, ms).error).toBe(
        '--keep PATH and --keep-ms N (a whole number of ms) go together',
      );
    }
  });

  it('refuses a path too long for a Unix socket (107 bytes at most)', () => {
    expect(keepArgs(`/${'a'.repeat(106)}`, '1').keep).toBeDefined();
    expect(keepArgs(`/${'a'.repeat(107)}`, '1').error).toMatch(/shorter than 108 bytes/);
    // bytes, not characters
    expect(keepArgs(`/${'é'.repeat(54)}`, '1').error).toMatch(/shorter than 108 bytes/);
  });
});

describe('RecentEnds', () => {
  it('keeps the last lines in order, the oldest overwritten once full', () => {
    const r = new RecentEnds(3);
    expect(r.list()).toEqual([]);
    r.add('a');
    r.add('b');
    expect(r.list()).toEqual(['a', 'b']);
    r.add('c');
    r.add('d');
    expect(r.list()).toEqual(['b', 'c', 'd']);
    for (const x of ['e', 'f', 'g']) r.add(x);
    expect(r.list()).toEqual(['e', 'f', 'g']);
  });

  it('holds 1,024 by default', () => {
    const r = new RecentEnds();
    for (let i = 0; i < RECENT_MAX + 5; i++) r.add(String(i));
    const list = r.list();
    expect(list).toHaveLength(1024);
    expect([list[0], list.at(-1)]).toEqual(['5', String(RECENT_MAX + 4)]);
  });
});

describe('statusLine', () => {
  it('puts the ended lines in verbatim, so they read back as they were sent', () => {
    const ended = ['{"ev":"exited","uid":"a","exitCode":0,"signal":null,"t":1.5}'];
    ended.push('{"ev":"failed","uid":"b\\n","code":"ENOENT","message":"no \\"x\\""}');
    const line = statusLine([{ uid: 'r', pid: 7 }], ['q'], ended);
    expect(line).toBe(
      `{"ev":"status","running":[{"uid":"r","pid":7}],"queued":["q"],"ended":[${ended.join(',')}]}`,
    );
    expect(JSON.parse(line)).toEqual({
      ev: 'status',
      running: [{ uid: 'r', pid: 7 }],
      queued: ['q'],
      ended: ended.map((l) => JSON.parse(l) as unknown),
    });
    expect(JSON.parse(statusLine([], [], []))).toEqual({
      ev: 'status',
      running: [],
      queued: [],
      ended: [],
    });
  });
});
