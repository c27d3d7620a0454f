import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { buildProgram } from '../../../src/cli/program';

const ROOT = path.resolve(__dirname, '../../..');

/** The help of the program and of each command, as `--help` prints it. */
function helps(): [string, string][] {
  let out = '';
  const program = buildProgram({ out: (s) => (out += s), err: () => undefined }, () => undefined);
  return [program, ...program.commands].map((cmd) => {
    out = '';
    cmd.outputHelp();
    return [cmd === program ? 'pilotfish' : `pilotfish ${cmd.name()}`, out];
  });
}

describe('the help texts', () => {
  it.each(helps())('%s --help names its docs by a path that exists', (_name, help) => {
    const named = [...help.matchAll(/(\S*)docs\/([\w-]+\.md)/g)].map((m) => m[0]);
    // a path relative to nothing ("docs/cli.md") does not lead a user of the installed package there
    expect(named.filter((p) => !path.isAbsolute(p))).toEqual([]);
    expect(named.filter((p) => !existsSync(p))).toEqual([]);
    for (const p of named) expect(path.dirname(p)).toBe(path.join(ROOT, 'docs'));
  });

  it('the program and the commands with a reference in docs/ point at it', () => {
    const pointing = helps()
      .filter(([, help]) => /docs\/[\w-]+\.md/.test(help))
      .map(([name]) => name);
    expect(pointing).toEqual(
      expect.arrayContaining(['pilotfish', 'pilotfish run', 'pilotfish status', 'pilotfish tail']),
    );
  });
});
