import { describe, expect, it } from '@jest/globals';
import { isFinal, linearModel, ownerOf, rankOf, type StateModel } from '../../../src/states/model';
import { PILOT_MODEL, PILOT_STATES } from '../../../src/states/pilot-model';
import {
  COMPONENTS,
  TASK_MODEL,
  TASK_RECOVERY_OWNER,
  TASK_RETRY_STATE,
  TASK_STATES,
} from '../../../src/states/task-model';

const FINALS = ['DONE', 'FAILED', 'CANCELED'];

/**
 * The holders, written out by hand from the design (docs/state-model.md, Ownership map) rather than read
 * from the code, so this
 * test checks the code against the design and not against itself.
 */
const TASK_HOLDERS: [string, string][] = [
  ['NEW', 'TaskManager'],
  ['TMGR_SCHEDULING_PENDING', 'ManagerScheduler'],
  ['TMGR_SCHEDULING', 'ManagerScheduler'],
  ['TMGR_STAGING_INPUT_PENDING', 'ManagerInputStager'],
  ['TMGR_STAGING_INPUT', 'ManagerInputStager'],
  ['AGENT_STAGING_INPUT_PENDING', 'AgentInputStager'],
  ['AGENT_STAGING_INPUT', 'AgentInputStager'],
  ['AGENT_SCHEDULING_PENDING', 'AgentScheduler'],
  ['AGENT_SCHEDULING', 'AgentScheduler'],
  ['AGENT_EXECUTING_PENDING', 'Executor'],
  ['AGENT_EXECUTING', 'Executor'],
  ['AGENT_STAGING_OUTPUT_PENDING', 'AgentOutputStager'],
  ['AGENT_STAGING_OUTPUT', 'AgentOutputStager'],
  ['TMGR_STAGING_OUTPUT_PENDING', 'ManagerOutputStager'],
  ['TMGR_STAGING_OUTPUT', 'ManagerOutputStager'],
];

const PILOT_HOLDERS: [string, string][] = [
  ['NEW', 'PilotManager'],
  ['PMGR_LAUNCHING_PENDING', 'PilotLauncher'],
  ['PMGR_LAUNCHING', 'PilotLauncher'],
  ['PMGR_ACTIVE_PENDING', 'PilotLauncher'],
  ['PMGR_ACTIVE', 'PilotLauncher'],
];

/**
 * Arrows off the linear path, [from, to, owner]: a ready service whose pilot ended is DONE,
 * ended by the Executor (docs/state-model.md).
 */
const TASK_EXTRAS: [string, string, string][] = [['AGENT_EXECUTING', 'DONE', 'Executor']];

/** The expected owner of from -> to under the design's rules, or undefined when forbidden. */
function expectedOwner(
  holders: [string, string][],
  extras: [string, string, string][],
  from: string,
  to: string,
): string | undefined {
  const extra = extras.find(([f, t]) => f === from && t === to);
  if (extra !== undefined) return extra[2];
  const i = holders.findIndex(([s]) => s === from);
  if (i < 0) return undefined; // a final state (or unknown): nothing leaves it
  const holder = holders[i]![1];
  const next = holders[i + 1]?.[0] ?? 'DONE';
  if (to === next || to === 'FAILED' || to === 'CANCELED') return holder;
  return undefined;
}

const cases: [
  string,
  StateModel<string>,
  readonly string[],
  [string, string][],
  [string, string, string][],
][] = [
  ['task', TASK_MODEL, TASK_STATES, TASK_HOLDERS, TASK_EXTRAS],
  ['pilot', PILOT_MODEL, PILOT_STATES, PILOT_HOLDERS, []],
];

describe.each(cases)('the %s model', (name, model, states, holders, extras) => {
  it('lists its states in model order, finals last', () => {
    expect(model.name).toBe(name);
    expect(model.states).toEqual(states);
    expect(model.states).toEqual([...holders.map(([s]) => s), ...FINALS]);
    expect(model.finals).toEqual(FINALS);
    expect(model.success).toBe('DONE');
  });

  it('allows a pair of states iff the design does, with the right owner (every pair)', () => {
    const mismatches: string[] = [];
    let allowed = 0;
    for (const from of states) {
      for (const to of states) {
        const want = expectedOwner(holders, extras, from, to);
        const got = ownerOf(model, from, to);
        if (got !== want) mismatches.push(`${from} -> ${to}: got ${got}, want ${want}`);
        if (want !== undefined) allowed++;
      }
    }
    expect(mismatches).toEqual([]);
    // 3 rows per non-final state: next, FAILED, CANCELED; and the extras
    expect(allowed).toBe(holders.length * 3 + extras.length);
    expect(model.transitions).toHaveLength(allowed);
  });

  it('has one owner per transition (no duplicate pair)', () => {
    const pairs = model.transitions.map((t) => `${t.from}|${t.to}`);
    expect(new Set(pairs).size).toBe(pairs.length);
  });

  it('gives every transition to the holder of its from state', () => {
    for (const t of model.transitions) expect(t.owner).toBe(model.holders[t.from]);
    expect(Object.entries(model.holders)).toEqual(holders);
  });

  it('names only known components as owners', () => {
    const known = new Set<string>(Object.values(COMPONENTS));
    expect(model.transitions.filter((t) => !known.has(t.owner))).toEqual([]);
  });

  it('forbids moving backwards, staying in place and skipping a state', () => {
    const nonFinal = holders.map(([s]) => s);
    for (let i = 0; i < nonFinal.length; i++) {
      const from = nonFinal[i]!;
      expect(ownerOf(model, from, from)).toBeUndefined();
      for (let j = 0; j < i; j++) expect(ownerOf(model, from, nonFinal[j]!)).toBeUndefined();
      for (let j = i + 2; j < nonFinal.length; j++) {
        expect(ownerOf(model, from, nonFinal[j]!)).toBeUndefined();
      }
      const extra = extras.some(([f, t]) => f === from && t === 'DONE');
      if (i < nonFinal.length - 1 && !extra) expect(ownerOf(model, from, 'DONE')).toBeUndefined();
    }
  });

  it('forbids leaving a final state', () => {
    for (const from of FINALS) {
      for (const to of states) expect(ownerOf(model, from, to)).toBeUndefined();
    }
  });

  it('reaches DONE only from the last non-final state, and by the extras', () => {
    const intoDone = model.transitions.filter((t) => t.to === 'DONE').map((t) => t.from);
    const extraDone = extras.filter(([, t]) => t === 'DONE').map(([f]) => f);
    expect(intoDone).toEqual([holders[holders.length - 1]![0], ...extraDone]);
  });

  it('knows which states are final', () => {
    for (const s of states) expect(isFinal(model, s)).toBe(FINALS.includes(s));
    expect(isFinal(model, 'NOT_A_STATE')).toBe(false);
  });

  it('ranks states in model order, and unknown states at -1', () => {
    states.forEach((s, i) => expect(rankOf(model, s)).toBe(i));
    for (let i = 1; i < states.length; i++) {
      expect(rankOf(model, states[i]!)).toBeGreaterThan(rankOf(model, states[i - 1]!));
    }
    for (const t of model.transitions) {
      expect(rankOf(model, t.to)).toBeGreaterThan(rankOf(model, t.from));
    }
    expect(rankOf(model, 'NOT_A_STATE')).toBe(-1);
    expect(rankOf(model, 'new')).toBe(-1);
  });

  it('lets X_PENDING be set upstream and X by the owner of X', () => {
    for (const s of states.filter((x) => x.endsWith('_PENDING'))) {
      const x = s.slice(0, -'_PENDING'.length);
      if (!states.includes(x)) continue;
      const i = rankOf(model, s);
      const before = states[i - 1]!;
      // the pending state is held by X's owner, which makes X_PENDING -> X
      expect(model.holders[s]).toBe(model.holders[x]);
      expect(ownerOf(model, s, x)).toBe(model.holders[x]);
      // the move into X_PENDING is made by the component upstream
      expect(ownerOf(model, before, s)).toBe(model.holders[before]);
    }
  });
});

describe('task model specifics', () => {
  it('retries from TMGR_SCHEDULING_PENDING, held by the ManagerScheduler', () => {
    expect(TASK_RETRY_STATE).toBe('TMGR_SCHEDULING_PENDING');
    expect(TASK_MODEL.holders[TASK_RETRY_STATE]).toBe(COMPONENTS.managerScheduler);
  });

  it('makes the TaskManager the owner of last resort', () => {
    expect(TASK_RECOVERY_OWNER).toBe('TaskManager');
  });

  it('fails a task after output staging (a non-zero exit still stages output)', () => {
    expect(ownerOf(TASK_MODEL, 'TMGR_STAGING_OUTPUT', 'FAILED')).toBe('ManagerOutputStager');
    expect(ownerOf(TASK_MODEL, 'AGENT_EXECUTING', 'AGENT_STAGING_OUTPUT_PENDING')).toBe('Executor');
  });

  it('does not let another component fail a task it does not hold', () => {
    expect(ownerOf(TASK_MODEL, 'AGENT_EXECUTING', 'FAILED')).toBe('Executor');
    expect(ownerOf(TASK_MODEL, 'AGENT_EXECUTING', 'CANCELED')).not.toBe('TaskManager');
  });
});

describe('linearModel', () => {
  const m = linearModel(
    'pilot',
    [
      { state: 'A', holder: 'X' },
      { state: 'B', holder: 'Y' },
    ],
    { success: 'OK', failed: 'KO', canceled: 'STOP' },
    [{ from: 'OK', to: 'A', owner: 'Z' }],
  );

  it('builds states, finals, holders and transitions from the steps', () => {
    expect(m.states).toEqual(['A', 'B', 'OK', 'KO', 'STOP']);
    expect(m.finals).toEqual(['OK', 'KO', 'STOP']);
    expect(m.success).toBe('OK');
    expect(m.holders).toEqual({ A: 'X', B: 'Y' });
    expect(ownerOf(m, 'A', 'B')).toBe('X');
    expect(ownerOf(m, 'B', 'OK')).toBe('Y');
    expect(ownerOf(m, 'A', 'KO')).toBe('X');
    expect(ownerOf(m, 'B', 'STOP')).toBe('Y');
    expect(ownerOf(m, 'A', 'OK')).toBeUndefined();
  });

  it('appends extra transitions', () => {
    expect(ownerOf(m, 'OK', 'A')).toBe('Z');
    expect(m.transitions).toHaveLength(2 * 3 + 1);
  });
});
