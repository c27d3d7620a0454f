import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import { functionKind } from '../../../../../src/components/executor/kinds/function';
import {
  pythonInterpreter,
  pythonWorkerScript,
  workerCommand,
} from '../../../../../src/components/executor/functions/worker-process';
import type { TaskRecord } from '../../../../../src/generated';
import { ValidationError } from '../../../../../src/errors';
import { parsePilotDescription, parseTaskDescription } from '../../../../../src/lib/validate';

/** A python function task t1. */
function pyTask(fn: Record<string, unknown>): TaskRecord {
  return {
    uid: 't1',
    attempt: 1,
    state: 'AGENT_EXECUTING_PENDING',
    session: 'sess.1',
    pilot: 'pilot.1',
    sandbox: '/sb/t1',
    description: { mode: 'function', function: fn as { module: string } },
  };
}

describe('Python function tasks', () => {
  it('pass their language to the call; Node ones pass none (the default)', () => {
    const launch = { mpirun: 'mpirun', asRoot: false };
    const py = functionKind.prepare(
      pyTask({ language: 'python', module: 'pkg.mod', export: 'fn' }),
      '/sb/t1',
      launch,
    );
    expect(py).toMatchObject({
      ok: true,
      job: { call: { language: 'python', module: 'pkg.mod', export: 'fn', cwd: '/sb/t1' } },
    });
    const node = functionKind.prepare(pyTask({ module: '/m.js' }), '/sb/t1', launch);
    expect(node.ok && 'language' in node.job.call).toBe(false);
  });

  it('need an export: the schema says so at submission', () => {
    const d = { mode: 'function', function: { language: 'python', module: 'pkg.mod' } };
    expect(() => parseTaskDescription(d)).toThrow(ValidationError);
    expect(() => parseTaskDescription(d)).toThrow("/function must have required property 'export'");
    const ok = { ...d, function: { ...d.function, export: 'fn' } };
    expect(parseTaskDescription(ok)).toBeDefined();
    expect(() =>
      parseTaskDescription({ mode: 'function', function: { language: 'ruby', module: 'x' } }),
    ).toThrow('/function/language must be one of "node", "python"');
  });

  it('take the interpreter from agent.python', () => {
    const p = { resource: 'local', cores: 1, agent: { python: '/usr/bin/python3' } };
    expect(parsePilotDescription(p).agent?.python).toBe('/usr/bin/python3');
  });

  it('run the shipped worker under the interpreter named, unbuffered', () => {
    const script = pythonWorkerScript();
    expect(fs.existsSync(script)).toBe(true);
    const cmd = workerCommand('python', '/bin/sh'); // any executable: only the argv is looked at
    expect(cmd.argv).toEqual(['/bin/sh', '-u', script]);
    expect(pythonInterpreter('sh')).toMatch(/\/sh$/);
    expect(() => pythonInterpreter('no-such-python-here')).toThrow(
      "Python interpreter 'no-such-python-here' for function workers not found on PATH (set agent.python)",
    );
  });
});
