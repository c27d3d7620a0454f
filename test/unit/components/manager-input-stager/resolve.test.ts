import { describe, expect, it } from '@jest/globals';
import {
  cwdOnlyLookup,
  resolveStaging,
  type StagingLookup,
} from '../../../../src/components/manager-input-stager/resolve';
import type { StagingDirective } from '../../../../src/generated';
import { taskIn } from '../../../support/fixtures';

/** The session's tasks: `a` ran (sandbox known), `b` has not run yet. */
const LOOKUP: StagingLookup = {
  clientCwd: '/home/u/work',
  taskOf: (uid) => TASKS.get(uid),
  ranIn: () => undefined,
};
const TASKS = new Map([
  ['a', { sandbox: '/sess/p1/a' }],
  ['b', { sandbox: undefined }],
]);

function resolve(input: StagingDirective[], output: StagingDirective[] = [], uid = 'me') {
  const task = taskIn('TMGR_STAGING_INPUT', {
    uid,
    description: { inputStaging: input, outputStaging: output },
  });
  return resolveStaging(task, LOOKUP);
}

const copy = (source: string, target: string) => ({
  source,
  target,
  action: 'copy' as const,
  optional: false,
});

describe('resolveStaging', () => {
  it('gives no staging to a task without directives', () => {
    expect(resolveStaging(taskIn('TMGR_STAGING_INPUT'), LOOKUP)).toEqual({});
    expect(resolve([], [])).toEqual({});
  });

  it.each([
    ['client://in.txt', '/home/u/work/in.txt'],
    ['client://data/../in.txt', '/home/u/work/in.txt'],
    ['client:///etc/hosts', '/etc/hosts'],
    ['client://dir/', '/home/u/work/dir/'],
    ['pilot://shared/db', 'pilot://shared/db'],
    ['task://out.txt', 'task://out.txt'],
    ['task://me/out.txt', 'task://out.txt'],
    ['task://a/out.txt', '/sess/p1/a/out.txt'],
    ['task://a', '/sess/p1/a'],
    ['task://a/sub/', '/sess/p1/a/sub/'],
    ['task://nosuchtask/x', 'task://nosuchtask/x'],
    ['/scratch/x', '/scratch/x'],
  ])('resolves %s to %s', (from, to) => {
    expect(resolve([{ source: from, target: 'task://t' }])).toEqual({
      staging: { input: [copy(to, 'task://t')], output: [] },
    });
  });

  it('fills in the defaults and keeps what was given, for input and output', () => {
    expect(
      resolve(
        [{ source: 'client://a', target: 'task://', action: 'link', optional: true }],
        [{ source: 'task://r', target: 'client://r', action: 'move' }],
      ),
    ).toEqual({
      staging: {
        input: [{ source: '/home/u/work/a', target: 'task://', action: 'link', optional: true }],
        output: [{ source: 'task://r', target: '/home/u/work/r', action: 'move', optional: false }],
      },
    });
  });

  it("takes relative paths as RADICAL-Pilot does: an input's source and an output's target from the client's cwd, the other ends in the task's own directory", () => {
    expect(
      resolve(
        [
          { source: 'input.dat', target: 'input.dat' },
          { source: 'd/in', target: 'a/x' },
        ],
        [{ source: 'out/r.dat', target: 'results/' }],
      ),
    ).toEqual({
      staging: {
        input: [
          copy('/home/u/work/input.dat', 'task://input.dat'),
          // 'a' is a task of the session: a relative target is still this task's own a/x
          copy('/home/u/work/d/in', 'task://a/x'),
        ],
        output: [copy('task://out/r.dat', '/home/u/work/results/')],
      },
    });
  });

  it('keeps a transfer of relative paths on the sides it needs', () => {
    const transfer = { action: 'transfer' as const };
    expect(
      resolve(
        [{ source: 'in.dat', target: 'in.dat', ...transfer }],
        [{ source: 'r.dat', target: 'res/', ...transfer }],
      ),
    ).toEqual({
      staging: {
        input: [{ ...copy('/home/u/work/in.dat', 'task://in.dat'), ...transfer }],
        output: [{ ...copy('task://r.dat', '/home/u/work/res/r.dat'), ...transfer }],
      },
    });
  });

  it.each<[string, StagingDirective[], StagingDirective[], string]>([
    [
      'a task that has not run',
      [{ source: 'task://b/out.txt', target: 'task://' }],
      [],
      "inputStaging[0]: 'task://b/out.txt': task b has no sandbox yet (it has not run)",
    ],
    [
      'an unknown scheme',
      [{ source: 'x://y', target: 'task://x' }],
      [],
      "inputStaging[0]: 'x://y' has an unknown scheme 'x://' (client://, pilot://, task://, task://<uid>/ or an absolute path)",
    ],
    [
      'a transfer from the compute side',
      [
        { source: 'client://ok', target: 'task://' },
        { source: '/abs', target: 'task://', action: 'transfer' },
      ],
      [],
      "inputStaging[1]: a transfer's source must be a client:// path, not '/abs'",
    ],
    [
      'a transfer back to the compute side',
      [],
      [{ source: 'task://r', target: 'pilot://r', action: 'transfer' }],
      "outputStaging[0]: a transfer's target must be a client:// path, not 'pilot://r'",
    ],
    [
      'a transfer with both ends at the client',
      [{ source: 'client://a', target: 'client://b', action: 'transfer' }],
      [],
      "inputStaging[0]: a transfer's target must be on the compute side, not 'client://b'",
    ],
  ])('names the directive it cannot resolve: %s', (_what, input, output, error) => {
    expect(resolve(input, output)).toEqual({ error });
  });

  it('resolves a transfer with its client end made absolute', () => {
    expect(
      resolve(
        [{ source: 'client://in', target: 'task://in', action: 'transfer' }],
        [{ source: 'task://out', target: 'client:///res/out', action: 'transfer' }],
      ),
    ).toEqual({
      staging: {
        input: [
          { source: '/home/u/work/in', target: 'task://in', action: 'transfer', optional: false },
        ],
        output: [{ source: 'task://out', target: '/res/out', action: 'transfer', optional: false }],
      },
    });
  });

  it('names the file a transfer writes into a client folder (what the task is allowed to write)', () => {
    expect(
      resolve(
        [],
        [
          { source: 'task://sub/out.txt', target: 'client://results/', action: 'transfer' },
          { source: '/scratch/log', target: 'client:///res/', action: 'transfer' },
        ],
      ),
    ).toEqual({
      staging: {
        input: [],
        output: [
          {
            source: 'task://sub/out.txt',
            target: '/home/u/work/results/out.txt',
            action: 'transfer',
            optional: false,
          },
          { source: '/scratch/log', target: '/res/log', action: 'transfer', optional: false },
        ],
      },
    });
  });

  it('knows no other task with the default lookup', () => {
    const task = taskIn('TMGR_STAGING_INPUT', {
      description: { inputStaging: [{ source: 'task://a/x', target: 'client://y' }] },
    });
    expect(resolveStaging(task, cwdOnlyLookup('/w'))).toEqual({
      staging: { input: [copy('task://a/x', '/w/y')], output: [] },
    });
  });
});
