/**
 * A pilot whose Python function workers cannot start (an interpreter without msgpack, one that
 * does not exist): the pool's start fails once, is said once (the agent's log, the pilot's
 * warnings), and every Python function task ends FAILED with E_WORKER_START and the worker's
 * own words, none retried for it. (Node workers that cannot start: function-runner-start.test.ts.)
 */
import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ControlMessage } from '../../../src/generated';
import { runtimeOf } from '../../../src/client/runtime/runtime';
import { deferred, withTimeout } from '../../../src/lib/deferred';
import { fixtures, type Fixture } from '../../support/session-fixture';
import { tempDirs } from '../../support/temp-dirs';

/**
 * An interpreter without msgpack on any machine whose /usr/bin/python3 has it (Debian's
 * python3-msgpack, scripts/system-deps.sh): that python without `site` (-S: no dist-packages)
 * and isolated from the environment and the user's site-packages (-I).
 */
function pythonWithoutMsgpack(dir: string): string {
  const file = path.join(dir, 'python3');
  fs.writeFileSync(file, '#!/bin/sh\nexec /usr/bin/python3 -I -S "$@"\n', { mode: 0o755 });
  return file;
}

/** The agent log's entries with this message. */
function logged(sandbox: string, message: string): Record<string, unknown>[] {
  return fs
    .readFileSync(path.join(sandbox, 'agent.log'), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((e) => e.message === message);
}

/** Resolves with the first agent_warning of the session's pilot (its control channel). */
function nextWarning(fx: Fixture): Promise<string> {
  const got = deferred<string>();
  const off = runtimeOf(fx.session).control.on((m: ControlMessage) => {
    if (m.type === 'agent_warning' && m.pilot === fx.pilot.uid) got.resolve(m.warning);
  });
  return withTimeout(got.promise, 30_000, 'the pilot warning').finally(off);
}

const pyTask = (i: number) => ({
  uid: `py.${i}`,
  mode: 'function' as const,
  retries: 2,
  function: { language: 'python' as const, module: 'json', export: 'dumps', args: [i] },
});

describe('function workers that cannot start', () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-fnstart-');

  it('fails every Python call once with E_WORKER_START when agent.python lacks msgpack, retrying none', async () => {
    const python = pythonWithoutMsgpack(temp.make());
    const fx = await fixture.open({ agent: { python } });
    const warned = nextWarning(fx);
    const first = await fx.tmgr.submitTasks(Array.from({ length: 50 }, (_, i) => pyTask(i)));
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    const warning = await warned;
    // later calls fail the same way, without another start
    const later = await fx.tmgr.submitTasks([pyTask(50), pyTask(51)]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    const all = [...first, ...later];
    const message = all[0]!.reason?.message ?? '';
    for (const t of all) {
      expect([t.uid, t.state, t.reason?.code, t.attempt]).toEqual([
        t.uid,
        'FAILED',
        'E_WORKER_START',
        1,
      ]);
      expect(t.reason?.message).toBe(message);
    }
    expect(message).toContain(`python function workers cannot start (agent.python '${python}')`);
    expect(message).toContain("No module named 'msgpack'");
    expect(message).toContain('apt-get install python3-msgpack');
    expect(message).toContain('virtual environment');
    // said once: the agent's log and the pilot's warnings
    expect(warning).toBe(message);
    expect(fx.pilot.warnings).toEqual([message]);
    const logs = logged(fx.pilot.sandbox, 'function workers cannot start');
    expect(logs.map((l) => [l.level, l.language, l.why])).toEqual([['error', 'python', message]]);
    // the pool was started once: one worker log header per worker, none more
    const err = fs.readFileSync(path.join(fx.pilot.sandbox, 'fworker-python.0.err'), 'utf8');
    expect(err.match(/--- pilotfish function worker 0 starts/g)).toHaveLength(1);
  }, 90_000);

  it('names an interpreter that does not exist', async () => {
    const python = path.join(temp.make(), 'no', 'python3');
    const fx = await fixture.open({ agent: { python } });
    const tasks = await fx.tmgr.submitTasks([pyTask(0), pyTask(1)]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    for (const t of tasks) {
      expect([t.state, t.reason?.code, t.attempt]).toEqual(['FAILED', 'E_WORKER_START', 1]);
      expect(t.reason?.message).toContain(
        `Python interpreter '${python}' for function workers not found or not executable`,
      );
    }
  }, 60_000);
});
