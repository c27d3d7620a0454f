import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { TASK_STATES, type TaskState } from '../../../../src/states/task-model';
import { closedGate } from '../../../support/flock-gate';
import { agentPids, clientChild, killAgents } from '../../../support/client-child';
import { waitForExit } from '../../../support/processes';

const CLIENT = path.join(__dirname, '../../../support/dag-resume-client.js');

describe('a client killed with SIGKILL in the middle of a DAG', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'pf-resume-dag-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('is resumed by a new client that finishes the DAG; each state of each attempt is delivered once across both', async () => {
    const gate = path.join(root, 'gate');
    const log1 = path.join(root, 'first.log');
    const log2 = path.join(root, 'second.log');
    // g1, g2 and bad wait on it
    const closed = await closedGate(gate);
    try {
      const one = clientChild(CLIENT, ['first', root, log1, gate], process.env);
      const { session } = (await one.next('session id')) as { session: string };
      expect(await one.next('first client quiet')).toEqual({ quiet: true });
      one.proc.kill('SIGKILL');
      expect(await one.exit).toBe(null);

      // the agent runs on with no client: g1, g2 and bad end once the gate opens
      await closed.open();
      const two = clientChild(CLIENT, ['resume', root, log2, session], process.env);
      const { tasks } = (await two.next('resumed client summary')) as {
        tasks: Record<string, [TaskState, number, string | null]>;
      };
      expect(await two.exit).toBe(0);
      const done = (attempt = 1): [TaskState, number, null] => ['DONE', attempt, null];
      expect(tasks).toEqual({
        top: done(),
        flaky: done(2),
        g1: done(),
        g2: done(),
        bad: ['FAILED', 1, 'E_EXIT_CODE'],
        'bad-child': ['CANCELED', 1, 'E_DEPENDENCY'],
        cleanup: done(),
        join: done(),
        tail1: done(),
        tail2: done(),
        tail3: done(),
        tail4: done(),
        tail5: done(),
      });

      // every (state, attempt) once, across both clients, each attempt in model order
      const byTask = new Map<string, [TaskState, number][]>();
      for (const f of [log1, log2]) {
        for (const line of readFileSync(f, 'utf8').split('\n')) {
          const [kind, uid, state, attempt] = line.split(' ');
          if (kind !== 'task') continue;
          byTask.set(uid!, [...(byTask.get(uid!) ?? []), [state as TaskState, Number(attempt)]]);
        }
      }
      const rank = (s: TaskState): number => TASK_STATES.indexOf(s);
      for (const [uid, seen] of byTask) {
        const keys = seen.map(([s, a]) => `${a}:${s}`);
        expect([uid, new Set(keys).size]).toEqual([uid, keys.length]);
        for (let i = 1; i < seen.length; i++) {
          const [[s0, a0], [s1, a1]] = [seen[i - 1]!, seen[i]!];
          expect([uid, a1 > a0 || (a1 === a0 && rank(s1) > rank(s0))]).toEqual([uid, true]);
        }
        const [last, attempts] = [seen.at(-1)!, tasks[uid]!];
        expect([uid, ...last]).toEqual([uid, attempts[0], attempts[1]]);
      }
      expect([...byTask.keys()].sort()).toEqual(Object.keys(tasks).sort());
      // flaky's second attempt starts where a retry starts, and says so once
      expect(byTask.get('flaky')!.filter(([, a]) => a === 2)[0]).toEqual([
        'TMGR_SCHEDULING_PENDING',
        2,
      ]);
      // both clients delivered some: the kill really was mid-DAG
      for (const f of [log1, log2]) expect(readFileSync(f, 'utf8').length).toBeGreaterThan(0);
      for (const pid of agentPids(root)) await waitForExit(pid, 15_000);
    } finally {
      closed.remove();
      killAgents(root);
    }
  }, 180_000);
});
