import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { buildProgram } from '../../../src/cli/program';

const ROOT = path.resolve(__dirname, '../../..');
const doc = readFileSync(path.join(ROOT, 'docs/cli.md'), 'utf8');

/** GitHub's anchor of a heading: lower case, spaces to '-', punctuation other than '-' dropped. */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\w\s-]/g, '')
    .replace(/\s/g, '-');
}

const headings = new Set([...doc.matchAll(/^#{1,4} (.+)$/gm)].map((m) => anchor(m[1]!)));
const indexRows = [...doc.matchAll(/^\| \[`pilotfish (\w+)[^`]*`\]\(#([\w-]+)\)/gm)].map((m) => ({
  command: m[1]!,
  anchor: m[2]!,
}));

describe('docs/cli.md, the CLI reference', () => {
  const program = buildProgram({ out: () => undefined, err: () => undefined }, () => undefined);
  const commands = program.commands.map((c) => c.name());

  it('indexes every command the program has, with a section of its own', () => {
    expect(commands.length).toBeGreaterThan(0);
    for (const name of commands) {
      expect({ name, row: indexRows.some((r) => r.command === name) }).toEqual({ name, row: true });
      expect({ name, section: headings.has(`pilotfish-${name}`) }).toEqual({
        name,
        section: true,
      });
    }
  });

  it("links each command of the index to that command's section", () => {
    expect(indexRows.map((r) => r.anchor)).toEqual(indexRows.map((r) => `pilotfish-${r.command}`));
  });
});
