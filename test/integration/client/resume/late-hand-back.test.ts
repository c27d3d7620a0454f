import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Session, TaskManager } from '../../../../src';
import { Journal } from '../../../../src/client/resume/journal';
import type { Notification, TaskState } from '../../../../src/generated';
import { silentLogger } from '../../../../src/lib/logger';
import { TASK_STATES } from '../../../../src/states/task-model';
import { Bridge } from '../../../../src/transport/bridge';
import { QueueSender } from '../../../../src/transport/queue';
import { EmbeddedStore } from '../../../../src/updater/embedded/store';
import { UpdateWorker } from '../../../../src/updater/update-worker';

const PILOT = 'pilot.0000';
const upTo = (s: TaskState): TaskState[] => TASK_STATES.slice(0, TASK_STATES.indexOf(s) + 1);

/** What the store holds of `uid` when its client died: each state up to `last`. */
function history(uid: string, last: TaskState): Notification[] {
  return upTo(last).map((state, i) => {
    const n: Notification = { kind: 'task', uid, attempt: 1, state, ts: 1_000 + i, component: 'X' };
    if (state === 'TMGR_STAGING_INPUT_PENDING') n.detail = { pilot: PILOT };
    return n;
  });
}

/** The agent's hand-back notification: the exit and the output tails, and any reason. */
function handBack(uid: string, detail: NonNullable<Notification['detail']>): Notification {
  return {
    kind: 'task',
    uid,
    attempt: 1,
    state: 'TMGR_STAGING_OUTPUT_PENDING',
    ts: 2_000,
    component: 'AgentOutputStager',
    detail,
  };
}

const TIMEOUT = {
  code: 'E_TASK_TIMEOUT' as const,
  message: 'task ran longer than its timeoutS of 1 s and was killed',
  component: 'Executor',
  detail: { timeoutS: 1 },
};

describe('a resumed client whose tasks were handed back to the dead client', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  /**
   * A dead client's session: the journal names tasks a, b, c on pilot.0000 and the store has
   * a and b at AGENT_EXECUTING, and c staged out by the dead client (TMGR_STAGING_OUTPUT) with
   * its hand-back notification stored after it (UpdateWorkers compete: any order).
   */
  async function deadSession(): Promise<{ root: string; uid: string; store: string }> {
    const root = mkdtempSync(path.join(os.tmpdir(), 'pf-late-back-'));
    cleanup.push(() => rmSync(root, { recursive: true, force: true }));
    const first = await Session.open({ dir: root });
    await first.close();
    const dir = path.join(root, first.uid);
    const { journal } = Journal.read(dir);
    const d = { executable: '/bin/true' };
    journal.append({ t: 'pilots-added', mgr: 'tmgr.0000', pilots: [PILOT] });
    journal.append({
      t: 'tasks',
      mgr: 'tmgr.0000',
      tasks: [
        ['a', d],
        ['b', d],
        ['c', d],
      ],
    });
    const store = await EmbeddedStore.open(dir);
    await store.append([
      ...history('a', 'AGENT_EXECUTING'),
      ...history('b', 'AGENT_EXECUTING'),
      ...history('c', 'TMGR_STAGING_OUTPUT').filter(
        (n) => n.state !== 'TMGR_STAGING_OUTPUT_PENDING',
      ),
      handBack('c', { exitCode: 0, signal: null, stdout: 'c out\n', stderr: '' }),
    ]);
    await store.close();
    // the store's own socket in this process (an agent writes to its pilot's, with its keys)
    return { root, uid: first.uid, store: `inproc://${first.uid}/store` };
  }

  /** The dead client's session resumed, with a TaskManager recording every callback. */
  async function resumed() {
    const { root, uid, store } = await deadSession();
    const session = await Session.open({ dir: root, resume: uid });
    cleanup.push(() => session.close());
    const tmgr = new TaskManager(session);
    const seen: string[] = [];
    tmgr.onState((t, s, i) => seen.push(`${t.uid} ${s}${i.inferred ? ' (inferred)' : ''}`));
    await session.replay();
    const of = (u: string): string[] => seen.filter((l) => l.startsWith(`${u} `));
    const states = (u: string): string[] => of(u).map((l) => l.split(' ')[1]!);
    return { tmgr, store, uid, of, states };
  }

  it('stages out a task whose hand-back notification the store had after a later state', async () => {
    const { tmgr, states } = await resumed();
    await tmgr.waitTasks({ uids: ['c'], timeoutMs: 5_000 });
    const c = tmgr.get('c')!;
    expect([c.state, c.exitCode, c.stdout]).toEqual(['DONE', 0, 'c out\n']);
    expect(states('c')).toEqual(upTo('DONE'));
  });

  it('stages out each task whose hand-back notification reaches the store after it opened, once, with the exit and reason it tells', async () => {
    const { tmgr, store, uid, of, states } = await resumed();
    expect(tmgr.get('a')!.state).toBe('AGENT_EXECUTING');
    // the agent's UpdateWorker sends its batch again until the resumed store has it; the
    // hand-backs themselves went to the dead client
    const updates = await Bridge.queue();
    const worker = UpdateWorker.start({
      updatesAddress: updates.endpoints.out,
      storeAddress: store,
      session: uid,
      logger: silentLogger,
    });
    const sender = new QueueSender(updates.endpoints.in);
    cleanup.push(async () => {
      await sender.close();
      await worker.close();
      await updates.close();
    });
    await sender.send([
      handBack('a', { exitCode: 0, signal: null, stdout: 'a out\n', stderr: '' }),
      handBack('b', { exitCode: null, signal: 'SIGTERM', stdout: '', stderr: '', reason: TIMEOUT }),
    ]);
    await tmgr.waitTasks({ timeoutMs: 5_000 });

    const a = tmgr.get('a')!;
    expect([a.state, a.exitCode, a.stdout]).toEqual(['DONE', 0, 'a out\n']);
    const b = tmgr.get('b')!;
    expect([b.state, b.signal, b.reason]).toEqual(['FAILED', 'SIGTERM', TIMEOUT]);
    // once per state, in model order; the hand-back itself was delivered, not inferred
    expect(states('a')).toEqual(upTo('DONE'));
    expect(of('a')).toContain('a TMGR_STAGING_OUTPUT_PENDING');
    expect(states('b')).toEqual([...upTo('TMGR_STAGING_OUTPUT'), 'FAILED']);
  });
});
