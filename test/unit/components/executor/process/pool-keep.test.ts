/** SpawnerPool's keep mode, its pure parts (pool-keep.ts). */
import { describe, expect, it } from '@jest/globals';
import {
  checkKeep,
  keepArgs,
  keepSocket,
  mergeStatus,
  nextGenerations,
} from '../../../../../src/components/executor/process/pool-keep';

describe('keep sockets and arguments', () => {
  it('names one socket per slot in the directory', () => {
    expect(keepSocket({ dir: '/run/pf', ms: 1 }, 0)).toBe('/run/pf/helper-0.sock');
    expect(keepSocket({ dir: '/run/pf/', ms: 1 }, 12)).toBe('/run/pf/helper-12.sock');
    expect(keepArgs({ dir: '/run/pf', ms: 2500 }, 3)).toEqual([
      '--keep',
      '/run/pf/helper-3.sock',
      '--keep-ms',
      '2500',
    ]);
  });

  it('refuses what a helper could not use, saying what is allowed', () => {
    expect(() => checkKeep({ dir: 'run/pf', ms: 1 }, 1)).toThrow(
      "SpawnerPool keep.dir must be an absolute directory path, got 'run/pf'",
    );
    expect(() => checkKeep({ dir: '/run/pf', ms: -1 }, 1)).toThrow(
      'SpawnerPool keep.ms must be a whole number >= 0, got -1',
    );
    expect(() => checkKeep({ dir: '/run/pf', ms: 0.5 }, 1)).toThrow(/whole number/);
    const dir = `/${'d'.repeat(92)}`; // + '/helper-9.sock' is 107 bytes; '/helper-10.sock' 108
    expect(() => checkKeep({ dir, ms: 1 }, 10)).not.toThrow();
    expect(() => checkKeep({ dir, ms: 1 }, 11)).toThrow(
      `the socket '${dir}/helper-10.sock' must be at most 107 bytes`,
    );
  });
});

describe('mergeStatus', () => {
  it('joins the helpers in order, their ends as the handlers get them', () => {
    const tail = Buffer.from('line\n').toString('base64');
    const merged = mergeStatus([
      {
        ev: 'status',
        running: [{ uid: 'a', pid: 10 }],
        queued: ['q'],
        ended: [
          { ev: 'exited', uid: 'x', exitCode: 0, signal: null, t: 5 },
          { ev: 'failed', uid: 'y', code: 'ENOENT', message: 'no such file' },
        ],
      },
      {
        ev: 'status',
        running: [{ uid: 'b', pid: 11 }],
        queued: [],
        ended: [
          {
            ev: 'exited',
            uid: 'z',
            exitCode: null,
            signal: 'SIGKILL',
            stdoutTail: tail,
            stderrTail: '',
            stdoutBytes: 5,
            stderrBytes: 0,
          },
        ],
      },
    ]);
    expect(merged).toEqual({
      running: [
        { uid: 'a', pid: 10 },
        { uid: 'b', pid: 11 },
      ],
      queued: ['q'],
      ended: [
        { ev: 'exited', uid: 'x', exitCode: 0, signal: null, t: 5 },
        { ev: 'failed', uid: 'y', code: 'ENOENT', message: 'no such file' },
        {
          ev: 'exited',
          uid: 'z',
          exitCode: null,
          signal: 'SIGKILL',
          output: { stdout: 'line\n', stderr: '', stdoutBytes: 5, stderrBytes: 0 },
        },
      ],
    });
    expect(mergeStatus([])).toEqual({ running: [], queued: [], ended: [] });
  });
});

describe('nextGenerations', () => {
  it('goes one past the highest stream file of each slot, parts included', () => {
    const names = [
      'spawner.0.0.pfout',
      'spawner.0.2.pfout',
      'spawner.0.2-3.pfout',
      'spawner.1.4-1.pfout',
      'spawner.7.9.pfout', // another pool's slot, beyond this one's count
      'spawner.x.1.pfout',
      'notes.txt',
    ];
    expect(nextGenerations(names, 3)).toEqual([3, 5, 0]);
    expect(nextGenerations([], 2)).toEqual([0, 0]);
  });
});
