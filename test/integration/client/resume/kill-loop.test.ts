import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PILOT_STATES } from '../../../../src/states/pilot-model';
import { TASK_STATES } from '../../../../src/states/task-model';
import {
  agentPids,
  clientChild,
  killAgents,
  type ClientChild,
} from '../../../support/client-child';
import { waitForExit } from '../../../support/processes';

const CLIENT = path.join(__dirname, '../../../support/kill-loop-client.js');
const RUNS = 20;
/** Runs at a time: a run mostly waits (on the agents' store retries, on the agents' ends). */
const AT_ONCE = 4;
const TASKS = 6;

/** How each task of the loop client ends: every third one exits 3. */
function expected(uid: string): [string, string | null] {
  return Number(uid.split('.')[1]) % 3 === 2 ? ['FAILED', 'E_EXIT_CODE'] : ['DONE', null];
}

const upTo = (s: string): string[] => TASK_STATES.slice(0, TASK_STATES.indexOf(s as never) + 1);
const LIFE = { DONE: upTo('DONE'), FAILED: [...upTo('TMGR_STAGING_OUTPUT'), 'FAILED'] };

/** The callback lines of a log: "task|pilot UID STATE ATTEMPT". */
const lines = (file: string): string[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '');

/**
 * What is wrong with the callbacks the two clients delivered: each task must get each state of
 * its life once, in model order; the pilot each of its states at most once, in model order,
 * ending DONE (ended by the second client's close). The kill may land inside a callback, before its delivery is counted: that
 * one event (the first client's last) is delivered again by the second client, as documented
 * (DeliveredCounters), and is taken out once here.
 */
function callbackProblems(first: string[], second: string[]): string[] {
  const last = first.at(-1);
  const kind = last?.split(' ')[0];
  const again = second.findIndex((l) => l.split(' ')[0] === kind);
  const rest = again >= 0 && second[again] === last ? second.toSpliced(again, 1) : second;
  const byEntity = new Map<string, string[]>();
  for (const l of [...first, ...rest]) {
    const [k, uid, state] = l.split(' ');
    byEntity.set(`${k} ${uid}`, [...(byEntity.get(`${k} ${uid}`) ?? []), state!]);
  }
  const problems: string[] = [];
  for (const [entity, states] of byEntity) {
    const [k, uid] = entity.split(' ');
    if (k === 'task') {
      const life = LIFE[expected(uid!)[0] as 'DONE' | 'FAILED'];
      if (states.join() !== life.join()) problems.push(`${entity} callbacks: ${states.join(' ')}`);
      continue;
    }
    const ranks = states.map((s) => PILOT_STATES.indexOf(s as never));
    const ordered = ranks.every((r, i) => r >= 0 && (i === 0 || r > ranks[i - 1]!));
    if (!ordered || states.at(-1) !== 'DONE') {
      problems.push(`${entity} callbacks: ${states.join(' ')}`);
    }
  }
  return problems;
}

/**
 * One run: a client submits short tasks to a 2-core local pilot and is killed with SIGKILL once
 * `killAt` of them reached AGENT_EXECUTING (others are ending, their hand-backs on the wire);
 * a second client resumes the session, waits for every task and closes it. Returns what went
 * wrong (nothing: empty) and whether the resumed client staged out a task from its hand-back
 * notification (its hand-back lost with the first client).
 */
async function killAndResume(
  dir: string,
  killAt: number,
): Promise<{ problems: string[]; fromStore: boolean }> {
  const log1 = path.join(dir, 'first.log');
  const log2 = path.join(dir, 'second.log');
  const one = clientChild(CLIENT, ['first', dir, log1, String(TASKS)], process.env);
  let two: ClientChild | undefined;
  try {
    const { session } = (await one.next('session id', 30_000)) as { session: string };
    for (let k = 1; k <= killAt; k++) await one.next(`task ${k} executing`, 30_000);
    one.proc.kill('SIGKILL');
    expect(await one.exit).toBe(null);

    two = clientChild(CLIENT, ['resume', dir, log2, session, '30000'], process.env);
    const { tasks } = (await two.next('resumed client tasks', 60_000)) as {
      tasks: Record<string, [string, string | null]>;
    };
    expect(await two.next('resumed client closed', 30_000)).toEqual({ closed: true });
    expect(await two.exit).toBe(0);
    // the resumed client canceled the pilot at close: its agent is gone
    for (const pid of agentPids(dir)) await waitForExit(pid, 20_000);

    const problems: string[] = [];
    if (Object.keys(tasks).length !== TASKS) problems.push(`${Object.keys(tasks).length} tasks`);
    for (const [uid, end] of Object.entries(tasks)) {
      if (end.join() !== expected(uid).join()) {
        problems.push(`${uid} ended ${end.join(' ')}, expected ${expected(uid).join(' ')}`);
      }
    }
    problems.push(...callbackProblems(lines(log1), lines(log2)));
    const clientLog = readFileSync(path.join(dir, session, 'client.log'), 'utf8');
    return { problems, fromStore: clientLog.includes('whose hand-back the store told of') };
  } finally {
    for (const c of [one, two]) {
      if (c !== undefined && c.proc.exitCode === null) c.proc.kill('SIGKILL');
    }
    killAgents(dir);
  }
}

describe('a client killed with SIGKILL while its tasks come back', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'pf-resume-loop-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it(`leaves no task behind in ${RUNS} runs: each ends in its final state with its reason, each state is delivered once, and no agent is left`, async () => {
    const failed: string[] = [];
    let fromStore = 0;
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let run = next++; run < RUNS; run = next++) {
        const dir = path.join(root, `run${run}`);
        mkdirSync(dir);
        // kill at different points of the hand-backs: after the 1st, 2nd, ... task started
        const r = await killAndResume(dir, 1 + (run % 4));
        failed.push(...r.problems.map((p) => `run ${run}: ${p}`));
        if (r.fromStore) fromStore++;
      }
    };
    await Promise.all(Array.from({ length: AT_ONCE }, worker));
    process.stderr.write(
      `resume-kill-loop: ${RUNS} runs, ${fromStore} staged out a task from its hand-back notification\n`,
    );
    expect(readdirSync(root)).toHaveLength(RUNS);
    expect(failed).toEqual([]);
  }, 240_000);
});
