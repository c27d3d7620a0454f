import { describe, expect, it } from '@jest/globals';
import { ValidationError } from '../../../../src/errors';
import { checkDependencies } from '../../../../src/client/tasks/dependencies';
import type { TaskDescription } from '../../../../src/generated';

const exe = (after?: TaskDescription['after']): TaskDescription =>
  after === undefined ? { executable: 'x' } : { executable: 'x', after };

function issuesOf(fn: () => void): { path: string; message: string }[] {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    return (e as ValidationError).issues;
  }
  throw new Error('expected a ValidationError');
}

describe('checkDependencies', () => {
  it('accepts tasks of the session and of the bulk, in any order within the bulk', () => {
    expect(() =>
      checkDependencies(
        [exe(['b', 'old']), exe([{ task: 'old', on: 'final' }])],
        ['a', 'b'],
        (u) => (u === 'old' ? 'executable' : undefined),
      ),
    ).not.toThrow();
  });

  it('rejects an unknown uid and a ready dependency with the path of each entry', () => {
    const issues = issuesOf(() =>
      checkDependencies(
        [exe(), exe(['a', 'ghost', { task: 'a', on: 'ready' }])],
        ['a', 'b'],
        () => undefined,
      ),
    );
    expect(issues).toEqual([
      { path: '/1/after/1', message: "must name a task of the session ('ghost' is none)" },
      {
        path: '/1/after/2',
        message: "on 'ready' waits for a service task; a is not one (mode 'executable')",
      },
    ]);
  });

  it("accepts on 'ready' for a service of the bulk or of the session", () => {
    const svc: TaskDescription = { mode: 'service', executable: 'srv' };
    expect(() =>
      checkDependencies(
        [
          svc,
          exe([
            { task: 's', on: 'ready' },
            { task: 'old', on: 'ready' },
          ]),
        ],
        ['s', 'c'],
        (u) => (u === 'old' ? 'service' : undefined),
      ),
    ).not.toThrow();
  });

  it('rejects a cycle, naming it, and a task that waits on itself', () => {
    expect(
      issuesOf(() =>
        checkDependencies([exe(['c']), exe(['a']), exe(['b'])], ['a', 'b', 'c'], () => undefined),
      ),
    ).toEqual([
      {
        path: '/0/after',
        message: 'must not wait on itself through others (cycle: a -> c -> b -> a)',
      },
    ]);
    expect(issuesOf(() => checkDependencies([exe(['s'])], ['s'], () => undefined))).toEqual([
      { path: '/0/after', message: 'must not wait on itself through others (cycle: s -> s)' },
    ]);
  });

  it('lists the first ten issues in its message and keeps them all', () => {
    const descs = Array.from({ length: 200 }, () => exe(['ghost']));
    const uids = descs.map((_, i) => `t${i}`);
    let err: ValidationError | undefined;
    try {
      checkDependencies(descs, uids, () => undefined);
    } catch (e) {
      err = e as ValidationError;
    }
    expect(err?.issues).toHaveLength(200);
    expect(err?.message).toContain("/9/after/0 must name a task of the session ('ghost' is none)");
    expect(err?.message).not.toContain('/10/after/0');
    expect(err?.message).toMatch(/; and 190 more \(see the error's issues\)$/);
  });

  it('finds no cycle in a long chain and a wide diamond', () => {
    const n = 20_000;
    const uids = Array.from({ length: n }, (_, i) => `t${i}`);
    const chain = uids.map((_, i) => exe(i === 0 ? undefined : [`t${i - 1}`]));
    expect(() => checkDependencies(chain, uids, () => undefined)).not.toThrow();
    const diamond = uids.map((_, i) =>
      exe(i === 0 ? undefined : i === n - 1 ? uids.slice(1, -1) : ['t0']),
    );
    expect(() => checkDependencies(diamond, uids, () => undefined)).not.toThrow();
  });
});
