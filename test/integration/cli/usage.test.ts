import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SESSION_LINE, runCli } from '../../support/cli';

const version = (
  JSON.parse(readFileSync(path.resolve(__dirname, '../../../package.json'), 'utf8')) as {
    version: string;
  }
).version;

/** Every command of pilotfish. */
const COMMANDS = [
  'run',
  'status',
  'cancel',
  'explain',
  'sessions',
  'clean',
  'profile',
  'timeline',
  'simulate',
  'tail',
  'logs',
  'submit',
];

describe('pilotfish usage', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pf-cli-usage-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each([[['--help']], [['-h']], [['help']], [['run', '--help']]])(
    '%j prints the help on stdout, exit 0',
    async (args) => {
      const r = await runCli(args);
      expect([r.code, r.stderr]).toEqual([0, '']);
      expect(r.stdout).toMatch(
        /Usage: pilotfish (run \[options\] <workload>|\[options\] \[command\])/,
      );
      expect(r.stdout).toMatch(args.includes('run') ? /exit status/i : /run .*\[workload\]/);
    },
  );

  it.each(COMMANDS)(
    '%s --help prints its usage and exit statuses on stdout, exit 0',
    async (cmd) => {
      const r = await runCli([cmd, '--help']);
      expect([r.code, r.stderr]).toEqual([0, '']);
      expect(r.stdout).toContain(`Usage: pilotfish ${cmd}`);
      expect(r.stdout).toMatch(/exit status/i);
    },
  );

  it('lists every command in the help', async () => {
    const r = await runCli(['--help']);
    for (const cmd of COMMANDS) {
      expect(r.stdout).toMatch(new RegExp(`^  ${cmd}\\b`, 'm'));
    }
  });

  it('--version prints the package version, exit 0', async () => {
    const r = await runCli(['--version']);
    expect([r.code, r.stdout, r.stderr]).toEqual([0, `${version}\n`, '']);
  });

  it.each([
    [['frobnicate'], /unknown command 'frobnicate'/],
    [['run', 'w.json', '--frob'], /unknown option '--frob'/i],
    [['run'], /missing required argument 'workload'/],
    [['run', 'a.json', 'b.json'], /too many arguments for 'run'/],
    [['run', 'w.json', '--dir'], /--dir.*argument/],
    [[], /Usage: pilotfish/],
  ])('wrong usage %j: a message on stderr, exit 2', async (args, message) => {
    const r = await runCli(args);
    expect([r.code, r.stdout]).toEqual([2, '']);
    expect(r.stderr).toMatch(message);
  });

  it('an empty workload runs nothing and exits 0 with a summary of 0 tasks', async () => {
    const file = path.join(dir, 'empty.json');
    writeFileSync(file, JSON.stringify({ tasks: [] }));
    const r = await runCli(['run', file, '--dir', dir]);
    expect([r.code, r.stderr]).toEqual([0, expect.stringMatching(SESSION_LINE)]);
    expect(r.stdout).toMatch(/: 0 tasks in/);
  }, 30_000);

  it('accepts a top-level "$schema" (editors add it), and only a string', async () => {
    const file = path.join(dir, 'schema.json');
    writeFileSync(
      file,
      JSON.stringify({ $schema: './workload.schema.json', tasks: [{ executable: '/bin/true' }] }),
    );
    const ok = await runCli(['run', file, '--dir', dir]);
    expect([ok.code, ok.stderr]).toEqual([0, expect.stringMatching(SESSION_LINE)]);
    expect(ok.stdout).toMatch(/DONE\s+1/);

    writeFileSync(file, JSON.stringify({ $schema: 7, tasks: [] }));
    const bad = await runCli(['run', file, '--dir', dir]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('/$schema must be string');
  }, 30_000);
});
