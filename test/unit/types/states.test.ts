import { describe, expect, it } from '@jest/globals';
import { diagnosticsOf } from '../../support/type-check';

const header = `import { PilotManager, Session, TaskManager } from '../../../src';
declare const session: Session;
const tmgr = new TaskManager(session);
const pmgr = new PilotManager(session);
`;

describe('task and pilot states in the public types', () => {
  it('rejects comparing an onState state with a string that is not a task state', () => {
    const diags = diagnosticsOf(
      `${header}tmgr.onState((_task, state) => {
  if (state === 'DONE') return;
  if (state === 'RUNNING') return;
});
`,
    );
    expect(diags).toHaveLength(1);
    expect(diags[0]).toMatch(/^TS2367 7: .*'"RUNNING"'.* no overlap/);
  }, 60_000);

  it('rejects a wait for a state that is not in the model, for tasks and pilots', () => {
    const diags = diagnosticsOf(
      `${header}void tmgr.waitTasks({ states: ['AGENT_EXECUTING', 'RUNNING'] });
void pmgr.waitPilots({ states: ['PMGR_ACTIVE', 'ACTIVE'] });
pmgr.onState((_p, state) => state === 'PMGR_ACTIVE' || state === 'AGENT_EXECUTING');
const s: 'DONE' | 'FAILED' = tmgr.list()[0]!.state;
`,
    );
    expect(diags.map((d) => d.slice(0, d.indexOf(':')))).toEqual([
      'TS2322 5',
      'TS2322 6',
      'TS2367 7',
      'TS2322 8',
    ]);
  }, 60_000);

  it('shows no internals on the public Session: its runtime stays behind it', () => {
    const diags = diagnosticsOf(
      `${header}void session.journal;
void session.pipeline;
void session.store;
void session.control;
const ok: [string, string] = [session.uid, session.dir];
`,
    );
    expect(diags.map((d) => d.slice(0, d.indexOf(':')))).toEqual([
      'TS2339 5',
      'TS2339 6',
      'TS2339 7',
      'TS2339 8',
    ]);
  }, 60_000);
});
