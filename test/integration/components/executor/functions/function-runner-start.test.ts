/**
 * FunctionRunner over real workers whose pool cannot start: each language's start is tried
 * once; its calls, and every later one of that language, fail E_WORKER_START with the
 * worker's own error, said once (cannotStart); the other language runs on.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type {
  ExitedEvent,
  FailedEvent,
  FunctionCall,
} from '../../../../../src/components/executor/effects';
import { FunctionRunner } from '../../../../../src/components/executor/functions/function-runner';
import { deferred, withTimeout } from '../../../../../src/lib/deferred';
import { silentLogger } from '../../../../../src/lib/logger';
import { tempDirs } from '../../../../support/temp-dirs';

/** What the runner told the Executor, and a wait for a condition on it. */
class Heard {
  readonly exited = new Map<string, ExitedEvent>();
  readonly failed = new Map<string, FailedEvent>();
  readonly cannotStart: string[] = [];
  private waiters: { check: () => boolean; resolve: () => void }[] = [];

  add(record: () => void): void {
    record();
    this.waiters = this.waiters.filter((w) => !w.check() || (w.resolve(), false));
  }

  until(what: string, check: () => boolean): Promise<void> {
    if (check()) return Promise.resolve();
    const d = deferred<void>();
    this.waiters.push({ check, resolve: () => d.resolve() });
    return withTimeout(d.promise, 20_000, what);
  }
}

describe('FunctionRunner whose workers cannot start', () => {
  const temp = tempDirs('pf-frstart-');
  let runner: FunctionRunner | undefined;
  afterEach(async () => {
    await runner?.close();
    runner = undefined;
  });

  function start(dir: string, env: Record<string, string>, heard: Heard): FunctionRunner {
    runner = new FunctionRunner({
      workers: 2,
      logger: silentLogger,
      logDir: dir,
      killGraceMs: 1_000,
      python: '/usr/bin/python3',
      env,
      started: () => undefined,
      exited: (evs) => heard.add(() => evs.forEach((e) => heard.exited.set(e.uid, e))),
      failed: (evs) => heard.add(() => evs.forEach((e) => heard.failed.set(e.uid, e))),
      cannotStart: (m) => heard.add(() => heard.cannotStart.push(m)),
    });
    return runner;
  }

  it('fails every Node call E_WORKER_START once the Node workers die before they are ready; Python calls run', async () => {
    const dir = temp.make();
    const preload = path.join(dir, 'broken.js');
    fs.writeFileSync(preload, "throw new Error('no workers here');\n");
    const js = path.join(dir, 'f.js');
    fs.writeFileSync(js, 'exports.twice = (x) => 2 * x;\n');
    const heard = new Heard();
    const r = start(dir, { NODE_OPTIONS: `--require ${preload}` }, heard);
    const node = (uid: string): FunctionCall => ({
      uid,
      module: js,
      export: 'twice',
      args: [1],
      env: {},
      worker: 0,
    });
    for (let i = 0; i < 20; i++) r.call(node(`node.${i}`));
    r.call({ ...node('py'), language: 'python', module: 'json', export: 'dumps' });
    await heard.until('the first calls', () => heard.failed.size === 20 && heard.exited.has('py'));
    // a later call of the broken language fails too, without another start
    r.call(node('later'));
    await heard.until('the later call', () => heard.failed.has('later'));
    const message = heard.cannotStart[0]!;
    expect(heard.cannotStart).toEqual([message]);
    expect(message).toMatch(
      /^node function workers cannot start: function worker \d exited before it was ready \(exit code 1\); its stderr ends:\n/,
    );
    expect(message).toContain('Error: no workers here');
    for (const f of heard.failed.values()) {
      expect(f).toEqual({ uid: f.uid, code: 'E_WORKER_START', message });
    }
    expect(heard.exited.get('py')).toMatchObject({ exitCode: 0, value: '1' });
    // one start: each worker's log tells its one process from its predecessors'
    for (const i of [0, 1]) {
      const err = fs.readFileSync(path.join(dir, `fworker.${i}.err`), 'utf8');
      expect(err.match(/--- pilotfish function worker \d starts/g)).toHaveLength(1);
    }
  });
});
