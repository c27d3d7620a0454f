import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { appendFileSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  AGENT_JOURNAL,
  AgentJournal,
  openAgentJournal,
  requeued,
} from '../../../src/agent/journal/journal';
import { replayJournal } from '../../../src/agent/journal/replay';
import type { TaskRecord } from '../../../src/generated';
import type { Notification } from '../../../src/states/notification';

const rec = (uid: string, attempt = 1, extra: Partial<TaskRecord> = {}): TaskRecord => ({
  uid,
  attempt,
  state: 'AGENT_STAGING_INPUT_PENDING',
  session: 's',
  description: { executable: '/bin/true' },
  ...extra,
});
const keys = (ts: readonly TaskRecord[]): string[] => ts.map((t) => `${t.uid}#${t.attempt}`).sort();
const slot = { node: 'n1', cores: [1], gpus: [] };

describe('replayJournal', () => {
  it('keeps what came in and did not leave, split by whether the Executor had it', () => {
    const held = replayJournal([
      { k: 'start', at: 100 },
      { k: 'in', tasks: [rec('a'), rec('b'), rec('c'), rec('d', 2)] },
      { k: 'x', at: 150, tasks: [rec('a', 1, { slots: [slot] }), rec('b', 1, { slots: [slot] })] },
      { k: 'out', keys: ['b#1', 'c#1'] },
      { k: 'start', at: 900 }, // a rewritten journal says the first start again
    ]);
    expect(held.startedAt).toBe(100);
    expect(keys(held.queued)).toEqual(['d#2']);
    expect(held.executing.map((e) => [e.task.uid, e.since, e.task.slots])).toEqual([
      ['a', 150, [slot]],
    ]);
    // everything that came in, left or not: a copy sent again is dropped
    expect([...held.seen]).toEqual([
      ['a', 1],
      ['b', 1],
      ['c', 1],
      ['d', 2],
    ]);
  });

  it('is empty for no entries', () => {
    const held = replayJournal([]);
    expect(held).toEqual({ startedAt: undefined, queued: [], executing: [], seen: new Map() });
  });
});

describe('AgentJournal', () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'pf-journal-'));
    file = path.join(dir, AGENT_JOURNAL);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const final = (uid: string, state: 'DONE' | 'FAILED' | 'AGENT_EXECUTING'): Notification => ({
    kind: 'task',
    uid,
    attempt: 1,
    state,
    ts: 1,
    component: 'Executor',
  });

  it('tells the next agent what the one before it held, after it died', () => {
    const first = openAgentJournal(dir, 3, 0, 1_000)!;
    expect(first.prior).toBeUndefined();
    const j = first.journal;
    j.received([rec('a'), rec('b'), rec('c'), rec('d'), rec('e')]);
    j.executing([rec('a', 1, { slots: [slot] }), rec('b', 1, { slots: [slot] })], 2_000);
    j.left([rec('c')]); // given back to the client
    j.ended([final('d', 'FAILED'), final('b', 'AGENT_EXECUTING')]); // d failed here
    void j.handingBack({ send: () => Promise.resolve() }).send([rec('e')]);
    // no close: the agent was SIGKILLed; the next one opens the file
    const next = openAgentJournal(dir, 3, 1, 5_000)!;
    expect(next.journal.firstStart).toBe(1_000);
    const prior = next.prior!;
    expect(prior.queued).toEqual([]);
    expect(prior.executing.map((e) => [e.task.uid, e.since])).toEqual([
      ['a', 2_000],
      ['b', 2_000],
    ]);
    expect([...prior.seen.keys()].sort()).toEqual(['a', 'b', 'c', 'd', 'e']);
    // it goes on from there: the third agent sees what the second did
    next.journal.ended([final('a', 'DONE')]);
    next.journal.received([rec('f')]);
    const third = openAgentJournal(dir, 3, 2, 9_000)!;
    expect(third.journal.firstStart).toBe(1_000);
    expect(keys(third.prior!.queued)).toEqual(['f#1']);
    expect(third.prior!.executing.map((e) => e.task.uid)).toEqual(['b']);
    for (const o of [first, next, third]) o.journal.close();
  });

  it('reads past a torn last entry (the agent died writing it)', () => {
    const j = openAgentJournal(dir, 1, 0, 1)!.journal;
    j.received([rec('a')]);
    j.close();
    appendFileSync(file, Buffer.from([0, 0, 1, 0, 0x93, 1])); // says 256 bytes, holds 2
    const { journal, prior } = AgentJournal.open(file, 2);
    expect(keys(prior.queued)).toEqual(['a#1']);
    journal.close();
  });

  it('is rewritten with what is held alone at each start', () => {
    const j = openAgentJournal(dir, 1, 0, 1)!.journal;
    const many = Array.from({ length: 2_000 }, (_, i) => rec(`t${i}`));
    j.received(many);
    j.left(many.slice(1));
    j.close();
    const big = statSync(file).size;
    const again = openAgentJournal(dir, 1, 1, 2)!;
    expect(keys(again.prior!.queued)).toEqual(['t0#1']);
    expect(statSync(file).size).toBeLessThan(big / 100);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    again.journal.close();
  });

  it('is none without restarts, and a first start drops a file left there', () => {
    expect(openAgentJournal(dir, 0, 0, 1)).toBeUndefined();
    writeFileSync(file, 'not a journal');
    const fresh = openAgentJournal(dir, 2, 0, 7)!;
    expect(fresh.prior).toBeUndefined();
    expect(fresh.journal.firstStart).toBe(7);
    fresh.journal.close();
  });
});

describe('requeued', () => {
  it('sends tasks back to the first hop, without the slots the dead agent gave them', () => {
    const t = rec('a', 2, { state: 'AGENT_SCHEDULING', slots: [slot] });
    const [r] = requeued([t]);
    expect(r!.state).toBe('AGENT_STAGING_INPUT_PENDING');
    expect(r!.slots).toBeUndefined();
    expect(r!.attempt).toBe(2);
    expect(t.slots).toEqual([slot]); // the journal's copy is not touched
  });
});
