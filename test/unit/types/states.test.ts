import * as path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import ts from 'typescript';

const root = path.resolve(__dirname, '../../..');

/**
 * Type-checks a user script against the public API (src/index.ts) with the project's compiler
 * options and returns its diagnostics as `TSnnnn line: message`.
 */
function diagnosticsOf(script: string): string[] {
  const configPath = path.join(root, 'tsconfig.json');
  const config = ts.readConfigFile(configPath, (f) => ts.sys.readFile(f));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, root);
  const file = path.join(root, 'test/unit/types/__user-script__.ts');
  const host = ts.createCompilerHost(parsed.options);
  const read = host.readFile.bind(host);
  host.readFile = (f) => (path.resolve(f) === file ? script : read(f));
  const exists = host.fileExists.bind(host);
  host.fileExists = (f) => path.resolve(f) === file || exists(f);
  const program = ts.createProgram([file], { ...parsed.options, noEmit: true }, host);
  return ts.getPreEmitDiagnostics(program, program.getSourceFile(file)).map((d) => {
    const line =
      d.file !== undefined && d.start !== undefined
        ? d.file.getLineAndCharacterOfPosition(d.start).line + 1
        : 0;
    return `TS${d.code} ${line}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
}

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
