import { describe, expect, it } from '@jest/globals';
import { batchesOf, inputIssues, tasksOfInput } from '../../../src/cli/commands/submit';
import { ServerError } from '../../../src/cli/server-client';
import { ValidationError } from '../../../src/errors';

function issuesOf(raw: unknown): { path: string; message: string }[] {
  try {
    tasksOfInput(raw);
  } catch (e) {
    if (e instanceof ValidationError) return e.issues;
    throw e;
  }
  throw new Error('no ValidationError');
}

describe('tasksOfInput', () => {
  const t = { executable: '/bin/true' };

  it('takes a workload as pilotfish run does, a list of descriptions, or one', () => {
    const w = tasksOfInput({ pilots: [{ resource: 'local' }], tasks: [t, t], timeoutS: 5 });
    expect([w.tasks, w.unused, w.timeoutS, w.pathOf(1)]).toEqual([
      [t, t],
      ['pilots'],
      5,
      '/tasks/1',
    ]);
    const list = tasksOfInput([t]);
    expect([list.tasks, list.unused, list.pathOf(0)]).toEqual([[t], [], '/0']);
    const one = tasksOfInput(t);
    expect([one.tasks, one.pathOf(0)]).toEqual([[t], '']);
  });

  it('names the JSON path of every bad description', () => {
    expect(issuesOf([t, { executable: 1 }, { executable: '/x', frob: 1 }])).toEqual([
      { path: '/1/executable', message: 'must be string' },
      { path: '/2', message: "must not have property 'frob'" },
    ]);
    expect(issuesOf({ tasks: [t, { executable: 1 }] })).toEqual([
      { path: '/tasks/1/executable', message: 'must be string' },
    ]);
    expect(issuesOf(3)).toEqual([
      { path: '/', message: expect.stringMatching(/^must be a task description/) },
    ]);
  });
});

describe('batchesOf', () => {
  it('cuts at the count and at the bytes, an item too large alone a batch alone', () => {
    expect(batchesOf([1, 1, 1, 1, 1], 2, 100)).toEqual([
      [0, 2],
      [2, 4],
      [4, 5],
    ]);
    expect(batchesOf([40, 40, 40, 200, 10], 10, 100)).toEqual([
      [0, 2],
      [2, 3],
      [3, 4],
      [4, 5],
    ]);
    expect(batchesOf([], 10, 100)).toEqual([]);
  });

  it('makes batches of 10,000 by default', () => {
    expect(batchesOf(new Array<number>(25_000).fill(10))).toEqual([
      [0, 10_000],
      [10_000, 20_000],
      [20_000, 25_000],
    ]);
  });
});

describe('inputIssues', () => {
  it("names a refused batch's issues where they are in the input", () => {
    const e = new ServerError(409, 'E_UID_TAKEN', 'taken', [
      { path: '/tasks/2/uid', message: 'is taken', in: 'body' },
      { path: '/', message: 'whole' },
    ]);
    const got = inputIssues(e, 10_000, (i) => `/tasks/${i}`);
    expect([got.status, got.code, got.message]).toEqual([409, 'E_UID_TAKEN', 'taken']);
    expect(got.issues).toEqual([
      { path: '/tasks/10002/uid', message: 'is taken' },
      { path: '/', message: 'whole' },
    ]);
    expect(inputIssues(e, 0, () => '').issues[0]).toEqual({ path: '/uid', message: 'is taken' });
  });
});
