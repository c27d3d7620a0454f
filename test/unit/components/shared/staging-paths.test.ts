import { describe, expect, it } from '@jest/globals';
import {
  agentPath,
  agentSteps,
  failureMessage,
  parseStagingPath,
  under,
  withStagingProblems,
} from '../../../../src/components/shared/staging-paths';
import { taskIn } from '../../../support/fixtures';

const SANDBOXES = { task: '/sess/p1/t1', pilot: '/sess/p1' };

describe('staging paths', () => {
  it.each([
    ['client://a/b', { scheme: 'client', rest: 'a/b' }],
    ['pilot://', { scheme: 'pilot', rest: '' }],
    ['task://u/x/', { scheme: 'task', rest: 'u/x/' }],
    ['/abs/x', { scheme: 'absolute', rest: '/abs/x' }],
  ])('parses %s', (p, parsed) => {
    expect(parseStagingPath(p)).toEqual(parsed);
  });

  it('folds dots and keeps a trailing slash', () => {
    expect(under('/a', 'b/../c/./d/')).toBe('/a/c/d/');
    expect(under('/a', '')).toBe('/a');
    expect(under('/a', '../b')).toBe('/b');
  });

  it.each([
    ['task://in.txt', '/sess/p1/t1/in.txt'],
    ['task://', '/sess/p1/t1'],
    ['pilot://db/', '/sess/p1/db/'],
    ['/x/../y', '/y'],
  ])('puts %s at %s on the agent', (p, at) => {
    expect(agentPath(p, SANDBOXES)).toEqual({ path: at });
  });

  it('refuses a client:// path the client should have resolved', () => {
    expect(agentPath('client://x', SANDBOXES)).toEqual({
      error: "'client://x' was not resolved by the client",
    });
  });

  it('makes steps of a task’s resolved directives, or names the first bad one', () => {
    const task = taskIn('AGENT_STAGING_INPUT', {
      sandbox: '/sess/p1/t1',
      staging: {
        input: [
          { source: '/home/u/in', target: 'task://', action: 'link', optional: true },
          { source: 'pilot://db', target: 'task://db' },
        ],
        output: [{ source: 'task://r', target: 'client://r' }],
      },
    });
    expect(agentSteps(task, 'input', '/sess/p1')).toEqual({
      steps: [
        { index: 0, action: 'link', source: '/home/u/in', target: '/sess/p1/t1', optional: true },
        {
          index: 1,
          action: 'copy',
          source: '/sess/p1/db',
          target: '/sess/p1/t1/db',
          optional: false,
        },
      ],
    });
    expect(agentSteps(task, 'output', '/sess/p1')).toEqual({
      index: 0,
      error: "'client://r' was not resolved by the client",
    });
  });

  it('words a failure with the directive as written, the file and the errno', () => {
    const task = taskIn('AGENT_STAGING_INPUT', {
      description: { inputStaging: [{ source: 'client://in.txt', target: 'task://' }] },
    });
    const f = {
      index: 0,
      path: '/home/u/in.txt',
      errno: 'ENOENT',
      text: 'no such file or directory',
    };
    expect(failureMessage(task, 'input', f)).toBe(
      'inputStaging[0] (copy client://in.txt -> task://): /home/u/in.txt: no such file or directory (ENOENT)',
    );
  });

  it('adds the problems a record carries to a reason’s detail', () => {
    const why = {
      code: 'E_EXIT_CODE' as const,
      message: 'm',
      component: 'c',
      detail: { exitCode: 2 },
    };
    const problem = { directive: 0, path: '/x', errno: 'ENOENT', message: 'gone' };
    const task = taskIn('TMGR_STAGING_OUTPUT', {
      staging: { input: [], output: [], problems: [problem] },
    });
    expect(withStagingProblems(why, task)).toEqual({
      ...why,
      detail: { exitCode: 2, staging: [problem] },
    });
    expect(withStagingProblems(undefined, task)).toBeUndefined();
    expect(withStagingProblems(why, taskIn('TMGR_STAGING_OUTPUT'))).toBe(why);
  });
});
