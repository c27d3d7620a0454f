import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import reasonSchema from '../../../schemas/reason.schema.json';
import { ValidationError } from '../../../src/errors';
import { parseNotification } from '../../../src/lib/validate';
import { REASON_CODES } from '../../../src/states/reason-codes';

const DOC = path.resolve(__dirname, '../../../docs/reason-codes.md');

/** The rows of the table in docs/reason-codes.md as [code, meaning, emitters]. */
function docRows(): string[][] {
  return readFileSync(DOC, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('| `'))
    .map((l) =>
      l
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim().replace(/^`|`$/g, '')),
    );
}

describe('reason codes', () => {
  it('the catalogue is the enum of code in schemas/reason.schema.json', () => {
    expect(Object.keys(REASON_CODES).sort()).toEqual([...reasonSchema.properties.code.enum].sort());
  });

  it('docs/reason-codes.md has one row per code, with its meaning and emitters', () => {
    const want = Object.entries(REASON_CODES).map(([code, i]) => [
      code,
      i.meaning,
      i.emitters.join(', '),
    ]);
    expect(docRows()).toEqual(want);
  });

  it('a reason with a code outside the catalogue is rejected, naming the path', () => {
    const note = {
      kind: 'task',
      uid: 't1',
      attempt: 1,
      state: 'FAILED',
      ts: 1,
      component: 'Executor',
      detail: { reason: { code: 'E_NO_SUCH_CODE', message: 'm', component: 'Executor' } },
    };
    expect(() => parseNotification(note)).toThrow(ValidationError);
    expect(() => parseNotification(note)).toThrow(
      /\/detail\/reason\/code must be one of "E_AGENT_DIED"/,
    );
    const ok = { ...note, detail: { reason: { ...note.detail.reason, code: 'E_EXIT_CODE' } } };
    expect(parseNotification(ok)).toEqual(ok);
  });
});
