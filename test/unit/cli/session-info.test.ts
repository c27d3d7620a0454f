import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { explainProfile, journalLife, profileStatus, stateOf } from '../../../src/cli/session-info';
import {
  clockTime,
  explanationLine,
  formatAge,
  formatStatus,
  statusLine,
} from '../../../src/cli/status-format';
import type { Reason } from '../../../src/generated';
import type { Profile, TaskProfile } from '../../../src/profile/types';
import type { TaskState } from '../../../src/states/task-model';

const reason: Reason = {
  code: 'E_EXIT_CODE',
  message: 'task exited with code 3',
  component: 'Executor',
};

/** A task whose one attempt passed `states`, a second apart from t=1000. */
function task(uid: string, states: TaskState[], extra: Partial<TaskProfile> = {}): TaskProfile {
  const final = states.at(-1);
  const ended = final === 'DONE' || final === 'FAILED' || final === 'CANCELED';
  return {
    uid,
    mode: 'executable',
    attempts: [
      {
        attempt: 1,
        pilot: 'pilot.0000',
        states: states.map((state, i) => ({ state, ts: 1000 * (i + 1) })),
        ...(ended ? { final } : {}),
        ...(final === 'FAILED' ? { reason } : {}),
      },
    ],
    ...extra,
  };
}

const profile: Profile = {
  session: 'pf.20261124.101500.abcdef',
  readAt: 10_000,
  pilots: [
    {
      uid: 'pilot.0000',
      resource: 'local',
      states: [{ state: 'PMGR_ACTIVE', ts: 500 }],
      nodes: [
        { name: 'a', cores: 2, gpus: 0 },
        { name: 'b', cores: 2, gpus: 1 },
      ],
    },
  ],
  tasks: [
    task('t0', ['NEW', 'AGENT_EXECUTING', 'DONE']),
    task('t1', ['NEW', 'AGENT_EXECUTING', 'FAILED'], { name: 'bad' }),
    task('t2', ['NEW', 'AGENT_EXECUTING']),
    task('t3', ['NEW', 'TMGR_SCHEDULING']),
    task('t4', ['NEW', 'AGENT_SCHEDULING']),
    { uid: 't5', mode: 'executable', attempts: [] }, // in the journal, not yet in the store
  ],
};

describe('a session without a live client, from its profile', () => {
  it('a task is in its last attempt’s final or last state, NEW before any', () => {
    expect(profile.tasks.map(stateOf)).toEqual([
      'DONE',
      'FAILED',
      'AGENT_EXECUTING',
      'TMGR_SCHEDULING',
      'AGENT_SCHEDULING',
      'NEW',
    ]);
  });

  it('status: pilots sized by their nodes, counts, running, the oldest pending first', () => {
    const st = profileStatus('/d', 'crashed', profile, { pending: 2 });
    expect(st).toMatchObject({
      session: profile.session,
      state: 'crashed',
      total: 6,
      counts: {
        DONE: 1,
        FAILED: 1,
        AGENT_EXECUTING: 1,
        TMGR_SCHEDULING: 1,
        AGENT_SCHEDULING: 1,
        NEW: 1,
      },
      pilots: [{ uid: 'pilot.0000', state: 'PMGR_ACTIVE', resource: 'local', cores: 4, gpus: 1 }],
      running: [{ uid: 't2', pilot: 'pilot.0000', since: 2000 }],
      runningTotal: 1,
      pendingTotal: 3,
    });
    expect(st.pending.map((e) => e.uid)).toEqual(['t3', 't4']);
  });

  it('explain: the state since it was entered, and the reason only when not DONE', () => {
    expect(explainProfile(profile.tasks[1]!)).toEqual({
      uid: 't1',
      name: 'bad',
      state: 'FAILED',
      attempt: 1,
      pilot: 'pilot.0000',
      since: 3000,
      reason,
    });
    expect(explainProfile(profile.tasks[5]!)).toEqual({ uid: 't5', state: 'NEW', attempt: 1 });
  });

  it('formats for people: a line per change, and the full status', () => {
    const st = profileStatus('/d', 'ended', profile);
    expect(statusLine(st)).toBe(
      'ended tasks=6 NEW=1 TMGR_SCHEDULING=1 AGENT_SCHEDULING=1 AGENT_EXECUTING=1 DONE=1 FAILED=1 | pilot.0000=PMGR_ACTIVE',
    );
    const text = formatStatus(st, 12_000);
    expect(text).toMatch(/^session pf\.20261124\.101500\.abcdef \(ended\)\n/);
    expect(text).toMatch(/\n {2}pilot\.0000 {2}local {2}PMGR_ACTIVE {2}4 cores, 1 GPUs\n/);
    expect(text).toMatch(/\nrunning: 1\n {2}t2 on pilot\.0000 for 10 s\n/);
    expect(text).toMatch(/\npending: 3\n {2}t3 TMGR_SCHEDULING for 10 s on pilot\.0000\n/);
    expect([
      formatAge(1500),
      formatAge(125_000),
      formatAge(5_400_000),
      formatAge(3 * 86_400_000),
    ]).toEqual(['1.5 s', '2 min', '1.5 h', '3.0 d']);
  });
});

describe('formatStatus: a pilot whose agent is silent', () => {
  const at = Date.UTC(2026, 10, 24, 12, 3, 4);
  const base = profileStatus('/d', 'live', profile);
  const pilot = base.pilots[0]!;
  const n3 = { part: 'sub-agent n3', since: at - 3_000 };

  it('says UNKNOWN, since when and for how long, and lists the silent parts', () => {
    const st = {
      ...base,
      pilots: [{ ...pilot, liveness: { state: 'unknown' as const, since: at, silentParts: [n3] } }],
    };
    const text = formatStatus(st, at + 7_000);
    expect(text).toContain(
      `  pilot.0000  local  PMGR_ACTIVE (UNKNOWN: silent since ${clockTime(at)}, 7.0 s)  4 cores`,
    );
    expect(text).toContain(`\n    silent: sub-agent n3 since ${clockTime(n3.since)}, 10 s\n`);
    expect(statusLine(st)).toMatch(/ \| pilot\.0000=PMGR_ACTIVE\(UNKNOWN, 1 part silent\)$/);
  });

  it('shows a part silent while the pilot is ok as such, and nothing for an ok pilot', () => {
    const ok = { state: 'ok' as const, silentParts: [] };
    const quiet = { ...base, pilots: [{ ...pilot, liveness: { ...ok, silentParts: [n3] } }] };
    const text = formatStatus(quiet, at);
    expect(text).toMatch(/ {2}PMGR_ACTIVE {2}4 cores, 1 GPUs\n {4}silent: sub-agent n3 since /);
    expect(statusLine(quiet)).toMatch(/=PMGR_ACTIVE\(1 part silent\)$/);
    const fine = { ...base, pilots: [{ ...pilot, liveness: ok }] };
    expect(formatStatus(fine, at)).toBe(formatStatus(base, at));
    expect(statusLine(fine)).toBe(statusLine(base));
  });
});

describe('explanationLine: the estimated start', () => {
  const base = {
    uid: 't1',
    state: 'AGENT_SCHEDULING' as const,
    attempt: 1,
    waiting: { kind: 'resources' as const, message: 'waiting for 1 core', component: 'x', ts: 0 },
  };
  it('says in how long and at what time; overdue as any moment', () => {
    const at = Date.UTC(2026, 10, 24, 14, 3, 12);
    const clock = new Date(at).toLocaleTimeString('en-GB', { hour12: false });
    const line = explanationLine({ ...base, estimatedStart: at }, at - 125_000);
    expect(line).toBe(
      `t1 AGENT_SCHEDULING: waiting for 1 core; estimated start in 2 min (${clock})`,
    );
    expect(explanationLine({ ...base, estimatedStart: at }, at + 1)).toContain(
      '; estimated start any moment (overdue)',
    );
  });
  it('why there is none only in full (explain), not in status lines', () => {
    const e = { ...base, noEstimate: 'no estimate: x' };
    expect(explanationLine(e, 0)).toBe('t1 AGENT_SCHEDULING: waiting for 1 core');
    expect(explanationLine(e, 0, true)).toBe(
      't1 AGENT_SCHEDULING: waiting for 1 core; no estimate: x',
    );
  });
});

describe('journalLife', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'pf-journal-life-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const life = (lines: string[]): ReturnType<typeof journalLife> => {
    const dir = mkdtempSync(path.join(root, 'journal-'));
    writeFileSync(path.join(dir, 'journal.jsonl'), lines.join('\n'));
    return journalLife(dir);
  };
  const session = JSON.stringify({ t: 'session', uid: 'x', addresses: { controlDown: 'tcp://a' } });
  const tasks = JSON.stringify({
    t: 'tasks',
    mgr: 'tmgr.0000',
    tasks: [
      ['a', {}],
      ['b', {}],
    ],
  });

  it('the last of the closed/resumed marks decides; a torn last line is left out', () => {
    expect(life([session, tasks, ''])).toEqual({ state: 'crashed', tasks: 2 });
    expect(life([session, tasks, '{"t":"closed","at":5}', ''])).toEqual({
      state: 'ended',
      closed: 5,
      tasks: 2,
    });
    const resumed = [session, '{"t":"closed","at":5}', '{"t":"resumed","at":6}', '{"t":"clo'];
    expect(life(resumed)).toEqual({ state: 'crashed', tasks: 0 });
  });

  it('the start time comes from the uid', () => {
    const dir = path.join(root, 'pf.20261124.101500.abcdef');
    expect(journalLife(dir)).toEqual({
      state: 'crashed',
      started: Date.UTC(2026, 10, 24, 10, 15, 0),
      tasks: 0,
    });
  });
});
