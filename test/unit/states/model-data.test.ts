import { readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { PILOT_STATES } from '../../../src/states/pilot-model';
import { TASK_STATES } from '../../../src/states/task-model';

const SRC = path.resolve(__dirname, '../../../src');

/** Every .ts file under src/ except the model's own folder and the generated types. */
function sources(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) {
      const rel = path.relative(SRC, full);
      return rel === 'states' || rel === 'generated' ? [] : sources(full);
    }
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

const FINALS = /'(DONE|FAILED|CANCELED)'\s*[|,]\s*'(DONE|FAILED|CANCELED)'/;
const STATES = new Set<string>([...TASK_STATES, ...PILOT_STATES]);
/** `  STATE: …` or `  'STATE': …`: an object keyed by states (an owner or holder table). */
const KEYED = /^\s*'?([A-Z][A-Z_]+)'?\s*:/;

describe('the model is data in src/states only', () => {
  it('has no list of final states and no table keyed by state anywhere else in src/', () => {
    const found: string[] = [];
    for (const file of sources()) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          const at = `${path.relative(SRC, file)}:${i + 1}: ${line.trim()}`;
          if (FINALS.test(line)) found.push(at);
          const key = KEYED.exec(line)?.[1];
          if (key !== undefined && STATES.has(key)) found.push(at);
        });
    }
    expect(found).toEqual([]);
  });

  it('would see such a list or table (the patterns are not dead)', () => {
    expect(FINALS.test("const F = new Set(['DONE', 'FAILED', 'CANCELED']);")).toBe(true);
    expect(FINALS.test("onShutdown(final: 'FAILED' | 'CANCELED')")).toBe(true);
    expect(KEYED.exec('  AGENT_EXECUTING: "agent",')?.[1]).toBe('AGENT_EXECUTING');
  });
});
