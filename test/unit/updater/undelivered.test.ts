import { afterEach, describe, expect, it } from '@jest/globals';
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Notification } from '../../../src/generated';
import {
  keepUndelivered,
  readUndelivered,
  removeUndelivered,
} from '../../../src/updater/undelivered';
import { linesLogger } from '../../support/lines-logger';

const note = (i: number): Notification => ({
  kind: 'task',
  uid: `task.${i}`,
  attempt: 1,
  state: 'DONE',
  ts: 1_000 + i,
  component: 'Executor',
});

describe('undelivered notifications of an agent that ended without its client', () => {
  const dirs: string[] = [];
  afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
  const sandbox = (): string => {
    const d = mkdtempSync(path.join(os.tmpdir(), 'pf-undelivered-'));
    dirs.push(d);
    return d;
  };

  it('are read back whole and in order, as many requests as it took, and removed once taken', () => {
    const dir = sandbox();
    const all = Array.from({ length: 2_500 }, (_, i) => note(i));
    const file = keepUndelivered(
      dir,
      'pilot.0000.uw0',
      { session: 's1', pilot: 'pilot.0000' },
      all,
    );
    expect(file).toBeDefined();
    expect(keepUndelivered(dir, 'pilot.0000.uw1', { session: 's1', pilot: 'pilot.0000' }, [])).toBe(
      undefined,
    );
    const log = linesLogger();
    const got = readUndelivered(dir, 's1', 'pilot.0000', log);
    expect(got.notifications).toEqual(all);
    expect(got.files).toEqual([file]);
    removeUndelivered(got.files, log);
    expect(readdirSync(dir)).toEqual([]);
    expect(log.warned()).toEqual([]);
  });

  it('are refused, and left where they are, for another session or pilot or when others may write them', () => {
    const dir = sandbox();
    keepUndelivered(dir, 'a', { session: 's2', pilot: 'pilot.0000' }, [note(1)]);
    keepUndelivered(dir, 'b', { session: 's1', pilot: 'pilot.0001' }, [note(2)]);
    const open = keepUndelivered(dir, 'c', { session: 's1', pilot: 'pilot.0000' }, [note(3)])!;
    chmodSync(open, 0o644);
    const log = linesLogger();
    const got = readUndelivered(dir, 's1', 'pilot.0000', log);
    expect(got).toEqual({ notifications: [], files: [] });
    expect(log.warned()).toEqual([
      'undelivered notifications not taken',
      'undelivered notifications not taken',
      'undelivered notifications not taken',
    ]);
    expect(readdirSync(dir)).toHaveLength(3);
  });

  it('of a sandbox this machine cannot see are none', () => {
    const log = linesLogger();
    expect(readUndelivered('/nonexistent/sandbox', 's1', 'p', log)).toEqual({
      notifications: [],
      files: [],
    });
  });
});
