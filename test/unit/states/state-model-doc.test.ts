import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import type { StateModel } from '../../../src/states/model';
import { PILOT_MODEL, PILOT_STATES } from '../../../src/states/pilot-model';
import { TASK_MODEL, TASK_STATES } from '../../../src/states/task-model';

const DOC_PATH = join(__dirname, '../../../docs/state-model.md');
const doc = readFileSync(DOC_PATH, 'utf8');

type Row = Record<string, string>;

/** The lines of the section under `heading` (exact line match), up to the next heading. */
function section(markdown: string, heading: string): string[] {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => l.trim() === heading);
  if (start < 0) throw new Error(`heading not found: ${heading}`);
  const level = /^#+/.exec(heading)![0].length;
  const body: string[] = [];
  for (const line of lines.slice(start + 1)) {
    const h = /^(#+)\s/.exec(line);
    if (h !== null && h[1]!.length <= level) break;
    body.push(line);
  }
  return body;
}

/** The first markdown table of a section, as rows keyed by header. Cells lose backticks. */
function firstTable(lines: readonly string[]): { header: string[]; rows: Row[] } {
  const start = lines.findIndex((l) => l.trim().startsWith('|'));
  if (start < 0) throw new Error('no table in section');
  const tableLines: string[] = [];
  for (const l of lines.slice(start)) {
    if (!l.trim().startsWith('|')) break;
    tableLines.push(l.trim());
  }
  const cells = (l: string): string[] =>
    l
      .replace(/^\|/, '')
      .replace(/\|$/, '')
      .split('|')
      .map((c) => c.trim().replace(/`/g, ''));
  const [headerLine, separator, ...body] = tableLines;
  const header = cells(headerLine!);
  if (separator === undefined || !cells(separator).every((c) => /^:?-+:?$/.test(c))) {
    throw new Error(`table has no separator row under ${headerLine}`);
  }
  const rows = body.map((l) => {
    const cs = cells(l);
    if (cs.length !== header.length) throw new Error(`row has ${cs.length} cells: ${l}`);
    return Object.fromEntries(header.map((h, i) => [h, cs[i]!]));
  });
  return { header, rows };
}

const key = (from: string, to: string, owner: string): string => `${from}|${to}|${owner}`;

describe('docs/state-model.md', () => {
  describe.each([
    ['## Task transitions', TASK_MODEL],
    ['## Pilot transitions', PILOT_MODEL],
  ] as [string, StateModel<string>][])('%s', (heading, model) => {
    const { header, rows } = firstTable(section(doc, heading));
    const docKeys = rows.map((r) => key(r.from!, r.to!, r.owner!));
    const codeKeys = model.transitions.map((t) => key(t.from, t.to, t.owner));

    it('has exactly the columns from | to | owner', () => {
      expect(header).toEqual(['from', 'to', 'owner']);
    });

    it('has no duplicate rows', () => {
      expect(new Set(docKeys).size).toBe(docKeys.length);
    });

    it(`lists exactly the ${model.name} model's transitions, with their owners`, () => {
      const inDoc = new Set(docKeys);
      const inCode = new Set(codeKeys);
      expect({
        missingFromDoc: codeKeys.filter((k) => !inDoc.has(k)),
        notInCode: docKeys.filter((k) => !inCode.has(k)),
      }).toEqual({ missingFromDoc: [], notInCode: [] });
      expect(docKeys).toHaveLength(codeKeys.length);
    });
  });

  describe.each([
    ['### Tasks', TASK_MODEL],
    ['### Pilots', PILOT_MODEL],
  ] as [string, StateModel<string>][])('ownership map, %s', (heading, model) => {
    it('names the holder of every non-final state as the code does', () => {
      const { rows } = firstTable(section(section(doc, '## Ownership map').join('\n'), heading));
      const docHolders = Object.fromEntries(rows.map((r) => [r.state!, r.holder!]));
      expect(rows).toHaveLength(Object.keys(docHolders).length);
      expect(docHolders).toEqual(model.holders);
    });
  });

  it.each([
    ['task', TASK_STATES],
    ['pilot', PILOT_STATES],
  ] as [string, readonly string[]][])('mentions every %s state', (_name, states) => {
    const words = new Set(doc.match(/[A-Z][A-Z_]+/g) ?? []);
    expect(states.filter((s) => !words.has(s))).toEqual([]);
  });

  it('names the retry state and the owner of last resort', () => {
    expect(doc).toContain('TASK_RETRY_STATE');
    expect(doc).toContain('TASK_RECOVERY_OWNER');
  });
});
