import { pathToFileURL } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { ValidationError } from '../../../../src/errors';
import {
  callArguments,
  callDescription,
  checkCallOptions,
  jsPath,
  moduleOfHandle,
  refuseArguments,
  type FunctionTarget,
} from '../../../../src/client/calls/function-call';

/** The error a call throws, for its fields (fails the test when it throws none). */
function thrown(fn: () => unknown): ValidationError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ValidationError) return e;
    throw e;
  }
  throw new Error('expected a ValidationError');
}

const node: FunctionTarget = { language: 'node', module: '/m/score.js', export: 'score' };

describe('moduleOfHandle', () => {
  it('takes a file: URL (object or text) as its path, and an absolute path as it is', () => {
    const url = pathToFileURL('/home/me/my project/score.js');
    expect(moduleOfHandle(url, 'node')).toBe('/home/me/my project/score.js');
    expect(moduleOfHandle(url.href, 'node')).toBe('/home/me/my project/score.js');
    expect(moduleOfHandle('/home/me/score.mjs', 'node')).toBe('/home/me/score.mjs');
  });

  it('refuses other URLs, relative paths and package names, naming what it takes', () => {
    const e = thrown(() => moduleOfHandle('https://example.org/score.js', 'node'));
    expect(e.issues).toEqual([
      {
        path: '/module',
        message:
          "must be a file: URL (new URL('./score.js', import.meta.url)) or an absolute path (path.join(__dirname, 'score.js')): https: URLs are not loaded",
      },
    ]);
    expect(thrown(() => moduleOfHandle(new URL('data:text/javascript,1'), 'node')).message).toMatch(
      /data: URLs are not loaded$/,
    );
    expect(thrown(() => moduleOfHandle('./score.js', 'node')).message).toMatch(
      /'.\/score.js' is relative \(or a package name\)/,
    );
    expect(thrown(() => moduleOfHandle('lodash', 'node')).issues[0]!.path).toBe('/module');
    expect(thrown(() => moduleOfHandle('file://other-host/x.js', 'node')).message).toMatch(
      /^invalid function module: \/module must be a file: URL/,
    );
    expect(thrown(() => moduleOfHandle(42, 'node')).message).toMatch(/got number$/);
  });

  it('takes a module name for Python, but not a relative file', () => {
    expect(moduleOfHandle('scoring.model', 'python')).toBe('scoring.model');
    expect(moduleOfHandle('/srv/score.py', 'python')).toBe('/srv/score.py');
    expect(thrown(() => moduleOfHandle('scoring/model.py', 'python')).message).toMatch(
      /must be a file: URL, an absolute path of a .py file or a module name \(pkg.mod\)/,
    );
  });
});

describe('checkCallOptions', () => {
  it('takes the options a call has and returns them', () => {
    const options = { coresPerRank: 2, timeoutS: 30, retries: 1, environment: { A: 'b' } };
    expect(checkCallOptions(options, node, 'score')).toBe(options);
    expect(checkCallOptions(undefined, node, 'score')).toEqual({});
  });

  it('refuses a field a call does not take, naming those it does', () => {
    const e = thrown(() => checkCallOptions({ uid: 'x', executable: '/bin/true' }, node, 'score'));
    expect(e.issues.map((i) => i.path)).toEqual(['/uid', '/executable']);
    expect(e.issues[0]!.message).toMatch(
      /^is not an option of a function handle \(allowed: name, labels, environment, .*, outputStaging\)$/,
    );
    expect(e.message).toMatch(/^invalid options of score: \/uid is not an option/);
  });

  it('refuses a value the task schema refuses, or one that is not plain data', () => {
    expect(thrown(() => checkCallOptions({ coresPerRank: 0 }, node, 'score')).issues).toEqual([
      { path: '/coresPerRank', message: 'must be >= 1' },
    ]);
    expect(
      thrown(() => checkCallOptions({ environment: new Map([['A', 'b']]) }, node, 'score')).issues,
    ).toEqual([{ path: '/environment', message: 'must be JSON data (a Map is not)' }]);
    expect(thrown(() => checkCallOptions([1], node, 'score')).issues).toEqual([
      { path: '/', message: 'must be an object' },
    ]);
  });
});

describe('callDescription', () => {
  it('makes a function task with the handle fields over the options', () => {
    expect(callDescription(node, { priority: 3 }, [1])).toEqual({
      priority: 3,
      mode: 'function',
      function: { module: '/m/score.js', export: 'score', args: [1] },
    });
    const py: FunctionTarget = { language: 'python', module: 'calc', export: 'add' };
    expect(callDescription(py, {}, [1, 2]).function).toEqual({
      module: 'calc',
      export: 'add',
      args: [1, 2],
      language: 'python',
    });
  });
});

describe('callArguments', () => {
  it('passes plain data, bytes and dates, and drops trailing undefined arguments', () => {
    const bytes = Buffer.from('x');
    const when = new Date(0);
    expect(callArguments([1, { a: [bytes, when, NaN] }, undefined, undefined])).toEqual({
      args: [1, { a: [bytes, when, NaN] }],
      issues: [],
    });
  });

  it('names each value that cannot travel by its path, as a pointer and as JavaScript writes it', () => {
    const cycle: Record<string, unknown> = { n: 1 };
    cycle.self = cycle;
    class Pose {
      x = 1;
    }
    const { issues } = callArguments([
      { items: [0, 1, 2, () => 3] },
      new Map(),
      undefined,
      { 'a b': Symbol('s'), 3: 10n },
      cycle,
      [new Pose(), new Set([1])],
    ]);
    expect(issues).toEqual([
      {
        path: '/0/items/3',
        where: 'args[0].items[3]',
        message: 'must be JSON data (a function is not)',
      },
      {
        path: '/1',
        where: 'args[1]',
        message: 'must be JSON data (a Map is not; bytes and valid dates are)',
      },
      { path: '/2', where: 'args[2]', message: 'must be JSON data (undefined is not: use null)' },
      { path: '/3/3', where: 'args[3]["3"]', message: 'must be JSON data (a bigint is not)' },
      { path: '/3/a b', where: 'args[3]["a b"]', message: 'must be JSON data (a symbol is not)' },
      {
        path: '/4/self',
        where: 'args[4].self',
        message: 'must not be a cycle (it is the value 1 level up)',
      },
      {
        path: '/5/0',
        where: 'args[5][0]',
        message: 'must be JSON data (an instance of Pose is not; bytes and valid dates are)',
      },
      {
        path: '/5/1',
        where: 'args[5][1]',
        message: 'must be JSON data (a Set is not; bytes and valid dates are)',
      },
    ]);
  });
});

describe('jsPath', () => {
  it('writes an escaped pointer with the keys it names', () => {
    expect(jsPath({ 'a/b': { '~x': [0] } }, '/a~1b/~0x/0', 'v')).toBe('v["a/b"]["~x"][0]');
    expect(jsPath([1], '/', 'args')).toBe('args');
  });
});

describe('refuseArguments', () => {
  it("throws one ValidationError for a map's bad calls: pointers into the list, places in its message", () => {
    const bad = (v: unknown) => callArguments([v]).issues;
    const e = thrown(() =>
      refuseArguments('score.map', [
        { index: 3, issues: bad({ f: () => 1 }) },
        { index: 7, issues: bad([undefined]) },
      ]),
    );
    expect(e.issues).toEqual([
      { path: '/3/0/f', message: 'must be JSON data (a function is not)' },
      { path: '/7/0/0', message: 'must be JSON data (undefined is not: use null)' },
    ]);
    expect(e.message).toBe(
      'score.map: call 3: args[0].f must be JSON data (a function is not); call 7: args[0][0] must be JSON data (undefined is not: use null)',
    );
    expect(() => refuseArguments('score', [{ index: undefined, issues: bad(Symbol()) }])).toThrow(
      'score: args[0] must be JSON data (a symbol is not)',
    );
  });
});
