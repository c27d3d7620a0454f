import { describe, expect, it } from '@jest/globals';
import { functionModule, type CallSettled, type TaskManager } from '../../../src';
import type * as Scoring from '../../support/scoring-module';
import { diagnosticsOf } from '../../support/type-check';

/**
 * Function handles are typed by their module: what follows is checked by `tsc -p tsconfig.json
 * --noEmit` (npm run typecheck), never run. Each `@ts-expect-error` fails the typecheck if its
 * line compiles; the test below checks, on a user script, that each such line fails for the
 * reason it stands for.
 */
function _typedByTheModule(tmgr: TaskManager): void {
  const scoring = functionModule<typeof Scoring>(tmgr, '/home/me/scoring.js');
  const score = scoring.handle('score', { retries: 1 });
  const label = scoring.handle('label');

  // a correct call, and its result type: the awaited value of the function's
  const energy: Promise<{ energy: number }> = score.call({ x: 1, y: 2 });
  const named: Promise<string> = label.call(2, 'm');
  const sweep: Promise<{ energy: number }[]> = score.map([{ x: 1, y: 2 }].map((p) => [p]));
  const settled: Promise<CallSettled<string>[]> = label.mapSettled([[1], [2, 'cm']]);
  void [energy, named, sweep, settled];

  // @ts-expect-error a wrong argument type: y is a number
  void score.call({ x: 1, y: '2' });
  // @ts-expect-error a wrong arity: score takes one argument
  void score.call({ x: 1, y: 2 }, 3);
  // @ts-expect-error a wrong arity: label needs its first
  void label.call();
  // @ts-expect-error a map's item is a call's argument list, checked as the call's
  void label.map([[1], ['2']]);
  // @ts-expect-error an export that is not a function
  scoring.handle('VERSION');
  // @ts-expect-error an export the module does not have
  scoring.handle('scor');
  // @ts-expect-error the result is not a string
  const wrong: Promise<string> = score.call({ x: 1, y: 2 });
  void wrong;
}
void _typedByTheModule;

const header = `import { functionModule, type TaskManager } from '../../../src';
declare const tmgr: TaskManager;
const scoring = functionModule<typeof import('../../support/scoring-module')>(tmgr, '/x/s.js');
const score = scoring.handle('score');
const label = scoring.handle('label');
`;

describe('function handles in the public types', () => {
  it('refuses a wrong argument, a wrong arity and an export that is not a function, and takes a right call', () => {
    const diags = diagnosticsOf(
      `${header}void score.call({ x: 1, y: '2' });
void score.call({ x: 1, y: 2 }, 3);
void label.call();
void label.map([[1], ['2']]);
scoring.handle('VERSION');
void score.map([{ x: 1, y: 2 }].map((p) => [p]));
void label.call(1);
void label.call(1, 'cm');
const py = functionModule<{ add(a: number, b: number): number }>(tmgr, 'calc.ops', {
  language: 'python',
});
const sum: Promise<number> = py.handle('add').call(1, 2);
void py.handle('add').call(1);
const any = functionModule(tmgr, '/x/untyped.js').handle('whatever');
const u: Promise<unknown> = any.call(1, 'two', [3]);
void [sum, u];
`,
    );
    expect(diags.map((d) => d.slice(0, d.indexOf(':')))).toEqual([
      'TS2322 6',
      'TS2554 7',
      'TS2554 8',
      'TS2322 9',
      'TS2345 10',
      'TS2554 18',
    ]);
    expect(diags[0]).toMatch(/'string' is not assignable to type 'number'/);
    expect(diags[1]).toMatch(/Expected 1 arguments, but got 2/);
    expect(diags[2]).toMatch(/Expected 1-2 arguments, but got 0/);
    expect(diags[4]).toMatch(
      /'"VERSION"' is not assignable to parameter of type 'FunctionExports</,
    );
    expect(diags[5]).toMatch(/Expected 2 arguments, but got 1/);
  }, 60_000);
});
