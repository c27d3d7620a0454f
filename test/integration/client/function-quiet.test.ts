import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Task } from '../../../src/client/task';
import { deferred, withTimeout } from '../../../src/lib/deferred';
import { EmbeddedStore } from '../../../src/updater/embedded/store';
import { TASK_STATES, type TaskState } from '../../../src/states/task-model';
import { gone } from '../../support/dir-entries';
import { fixtures } from '../../support/session-fixture';
import { tempDirs } from '../../support/temp-dirs';

const upTo = (s: TaskState): TaskState[] => TASK_STATES.slice(0, TASK_STATES.indexOf(s) + 1);

/**
 * Function tasks publish only the notifications that carry facts (docs/functions.md, "What you
 * see of a call"); the tracker infers the rest. Real agent, workers, store and callbacks.
 */
describe('function tasks: quiet states, a directory of their own unless they ask for the pilot sandbox', () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-fnq-');

  const moduleFile = (source: string): string => {
    const file = path.join(temp.make(), 'tasks.js');
    fs.writeFileSync(file, source);
    return file;
  };

  /** Every callback of the manager's tasks: uid -> [state, inferred, has a ts][]. */
  const record = (tmgr: {
    onState: (
      fn: (t: Task, s: TaskState, i: { inferred: boolean; ts?: number }) => void,
    ) => unknown;
  }) => {
    const seen = new Map<string, [TaskState, boolean, boolean][]>();
    tmgr.onState((t, s, i) => {
      const list = seen.get(t.uid) ?? [];
      list.push([s, i.inferred, i.ts !== undefined]);
      seen.set(t.uid, list);
    });
    return seen;
  };

  it('delivers every state of a call once, in model order, the quiet ones with the real times their carriers bring; the store holds three or four notifications per call', async () => {
    const mod = moduleFile(`
      exports.where = () => ({ cwd: process.cwd(), sandbox: process.env.PF_TASK_SANDBOX });
    `);
    const fx = await fixture.open();
    const seen = record(fx.tmgr);
    const tasks = await fx.tmgr.submitTasks(
      Array.from({ length: 50 }, (_, i) => ({
        mode: 'function' as const,
        function: { module: mod, export: 'where' },
        // every other one asks for the pilot's sandbox
        ...(i % 2 === 1 ? { sandbox: false } : {}),
      })),
    );
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    // once closed, the store holds all the agent sent (DONE may come before AGENT_EXECUTING)
    await fx.session.close();
    const store = await EmbeddedStore.open(fx.session.dir);
    const history = await store.history();
    await store.close();
    // the calls' own directories stayed empty: removed in the background once they ended
    await gone(
      tasks.map((t) => path.join(fx.pilot.sandbox, t.uid)),
      10_000,
    );
    for (const t of tasks) {
      expect([t.state, t.reason]).toEqual(['DONE', undefined]);
      // a published state may be inferred too, when a later one reached the store first
      const got = seen.get(t.uid)!;
      expect(got.map(([s]) => s)).toEqual(upTo('DONE'));
      // a quiet state comes with the real time its carrier brought, unless it was overtaken
      for (const [, inferred, hasTs] of got) expect(hasTs).toBe(!inferred);
      // the start only of a call that ran longer than the agent held it (START_HOLD_MS)
      const stored = history.filter((n) => n.uid === t.uid).map((n) => n.state);
      const start = stored.includes('AGENT_EXECUTING') ? ['AGENT_EXECUTING'] : [];
      expect(stored.sort()).toEqual(
        ['AGENT_STAGING_INPUT_PENDING', ...start, 'TMGR_STAGING_OUTPUT_PENDING', 'DONE'].sort(),
      );
      if (start.length === 0) {
        // dropped, its time carried by the hand-back: real unless the hand-back was overtaken
        const inferred = (state: TaskState) => got.find(([s]) => s === state)![1];
        expect(inferred('AGENT_EXECUTING')).toBe(inferred('TMGR_STAGING_OUTPUT_PENDING'));
      }
      // the hand-off names the pilot (a resumed client needs it), and the task knows it
      expect(
        history.find((n) => n.uid === t.uid && n.state === 'AGENT_STAGING_INPUT_PENDING')?.detail,
      ).toEqual({ pilot: fx.pilot.uid, passed: expect.any(Object) });
      expect(t.pilot).toBe(fx.pilot.uid);
      // its own directory (removed after it, as it stayed empty), or, asked, the pilot's
      const own = path.join(fx.pilot.sandbox, t.uid);
      const dir = t.description.sandbox === false ? fx.pilot.sandbox : own;
      expect(t.sandbox).toBe(dir);
      expect(t.result).toEqual({ cwd: dir, sandbox: dir });
      expect(fs.existsSync(own)).toBe(false);
    }
  }, 90_000);

  it('shows the start of a call that runs longer than the agent holds it, while it runs, with its real time', async () => {
    const dir = temp.make();
    const mod = moduleFile(`
      const fs = require('node:fs');
      const path = require('node:path');
      exports.waits = (dir) => new Promise((resolve) => {
        const go = path.join(dir, 'go');
        const watcher = fs.watch(dir, () => { if (fs.existsSync(go)) done(); });
        const done = () => { watcher.close(); resolve('released'); };
        if (fs.existsSync(go)) done();
      });
    `);
    const fx = await fixture.open();
    const started = deferred<{ inferred: boolean; ts: number | undefined; final: boolean }>();
    fx.tmgr.onState((t, s, i) => {
      if (s === 'AGENT_EXECUTING') {
        started.resolve({ inferred: i.inferred, ts: i.ts, final: t.final });
      }
    });
    const [task] = await fx.tmgr.submitTasks([
      { mode: 'function', function: { module: mod, export: 'waits', args: [dir] } },
    ]);
    const start = await withTimeout(started.promise, 30_000, 'the start of the call');
    expect(start).toEqual({ inferred: false, ts: expect.any(Number), final: false });
    fs.writeFileSync(path.join(dir, 'go'), '');
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect([task!.state, task!.result]).toEqual(['DONE', 'released']);
    await fx.session.close();
    const store = await EmbeddedStore.open(fx.session.dir);
    const mine = (await store.history()).filter((n) => n.uid === task!.uid);
    await store.close();
    const at = (state: TaskState) => mine.find((n) => n.state === state)?.ts;
    expect(at('AGENT_EXECUTING')).toBe(start.ts);
    expect(at('AGENT_EXECUTING')!).toBeLessThanOrEqual(at('TMGR_STAGING_OUTPUT_PENDING')!);
  }, 90_000);

  it('publishes a failure, a timeout and a cancel with their reasons; a call with a staging directive gets its own sandbox', async () => {
    const mod = moduleFile(`
      const fs = require('node:fs');
      exports.throws = () => { throw new RangeError('out of range'); };
      exports.hangs = () => new Promise(() => {});
      exports.writes = () => { fs.writeFileSync('out.txt', 'from ' + process.env.PF_TASK_ID); return process.cwd(); };
    `);
    const outDir = temp.make();
    const fx = await fixture.open();
    const seen = record(fx.tmgr);
    const fn = (uid: string, exp: string, more = {}) => ({
      uid,
      mode: 'function' as const,
      function: { module: mod, export: exp },
      ...more,
    });
    const tasks = await fx.tmgr.submitTasks([
      fn('throws', 'throws'),
      fn('hangs', 'hangs', { timeoutS: 1 }),
      fn('canceled', 'hangs'),
      fn('writes', 'writes', {
        outputStaging: [{ source: 'task:///out.txt', target: `client://${outDir}/out.txt` }],
      }),
    ]);
    const byUid = new Map(tasks.map((t) => [t.uid, t]));
    await fx.tmgr.waitTasks({ uids: ['canceled'], states: ['AGENT_EXECUTING'], timeoutMs: 30_000 });
    await fx.tmgr.cancelTasks(['canceled']);
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    const ended = (uid: string) => [byUid.get(uid)!.state, byUid.get(uid)!.reason?.code];
    expect(ended('throws')).toEqual(['FAILED', 'E_FUNCTION_THREW']);
    expect(ended('hangs')).toEqual(['FAILED', 'E_TASK_TIMEOUT']);
    expect(ended('canceled')).toEqual(['CANCELED', 'E_CANCELED']);
    expect(ended('writes')).toEqual(['DONE', undefined]);
    // a final state that is not DONE is delivered as notified (never inferred), with its reason
    for (const uid of ['throws', 'hangs', 'canceled']) {
      const states = seen.get(uid)!;
      expect(states.at(-1)).toEqual([byUid.get(uid)!.state, false, true]);
      const names = states.map(([s]) => s);
      expect(names).toEqual([...new Set(names)]);
      expect(names.map((s) => TASK_STATES.indexOf(s))).toEqual(
        names.map((s) => TASK_STATES.indexOf(s)).sort((a, b) => a - b),
      );
      expect(names).toContain('AGENT_EXECUTING');
    }
    const writes = byUid.get('writes')!;
    expect(writes.sandbox).toBe(path.join(fx.pilot.sandbox, 'writes'));
    expect(writes.result).toBe(writes.sandbox);
    expect(fs.readFileSync(path.join(outDir, 'out.txt'), 'utf8')).toBe('from writes');
  }, 90_000);

  it('queues calls in a worker: a call that kills it fails alone, those behind it run in its replacement; a queued call canceled never runs', async () => {
    const ran = temp.make();
    const mod = moduleFile(`
      const fs = require('node:fs');
      exports.aborts = () => process.abort();
      exports.hangs = () => new Promise(() => {});
      exports.mark = (dir) => { fs.writeFileSync(dir + '/' + process.env.PF_TASK_ID, ''); return process.pid; };
    `);
    const fx = await fixture.open({ cores: 1 });
    const fn = (uid: string, exp: string) => ({
      uid,
      mode: 'function' as const,
      function: { module: mod, export: exp, args: [ran] },
    });
    // one core: one worker, one lane; all go to it in one bulk, in submission order
    const first = await fx.tmgr.submitTasks([
      fn('aborts', 'aborts'),
      ...Array.from({ length: 10 }, (_, i) => fn(`after${i}`, 'mark')),
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    expect([first[0]!.state, first[0]!.reason?.code]).toEqual(['FAILED', 'E_WORKER_DIED']);
    for (const t of first.slice(1)) expect([t.state, t.reason]).toEqual(['DONE', undefined]);
    expect(fs.readdirSync(ran).sort()).toEqual(
      first
        .slice(1)
        .map((t) => t.uid)
        .sort(),
    );

    const [hangs, victim] = await fx.tmgr.submitTasks([fn('hangs', 'hangs'), fn('victim', 'mark')]);
    await fx.tmgr.waitTasks({ uids: ['victim'], states: ['AGENT_EXECUTING'], timeoutMs: 30_000 });
    await fx.tmgr.cancelTasks(['victim']);
    await fx.tmgr.waitTasks({ uids: ['victim'], timeoutMs: 30_000 });
    expect([victim!.state, victim!.reason?.code]).toEqual(['CANCELED', 'E_CANCELED']);
    expect(hangs!.final).toBe(false);
    await fx.tmgr.cancelTasks(['hangs']);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect(hangs!.state).toBe('CANCELED');
    expect(fs.existsSync(path.join(ran, 'victim'))).toBe(false);
  }, 90_000);
});
