import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';

/** Exit statuses of `pilotfish`; the help and docs/cli.md list them. */
export const EXIT = { ok: 0, failed: 1, usage: 2, timeout: 3 } as const;

export const USAGE = `usage: pilotfish run WORKLOAD.json [--dir SESSIONS_DIR]
       pilotfish --help | --version

  run   runs the workload's tasks on its pilots (default: one local pilot with
        every core), shows progress, and prints a summary.

options:
  --dir SESSIONS_DIR  where the session's directory is made (default: ./.pilotfish)
  -h, --help          print this help and exit
  --version           print pilotfish's version and exit

exit status:
  0  every task ended DONE (also when the workload has no tasks)
  1  some task ended FAILED or CANCELED, or pilotfish failed (message on stderr)
  2  wrong usage or an invalid workload file (the message is on stderr)
  3  the workload's timeoutS passed before every task ended

The workload file and the summary: docs/cli.md.
`;

export type Command =
  | { kind: 'help' }
  | { kind: 'version' }
  | { kind: 'run'; file: string; dir?: string }
  | { kind: 'usage-error'; message: string };

/** Parses the command line (without node and the script); never throws. */
export function parseCommand(argv: string[]): Command {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean' },
        dir: { type: 'string' },
      },
    });
  } catch (e) {
    // node's messages for an unknown option or a missing value are clear; keep their first sentence
    return { kind: 'usage-error', message: (e as Error).message.split('. ')[0]! };
  }
  const { values, positionals } = parsed;
  if (values.help === true || positionals[0] === 'help') return { kind: 'help' };
  if (values.version === true) return { kind: 'version' };
  const [cmd, ...files] = positionals;
  if (cmd === undefined) return { kind: 'usage-error', message: 'no command given' };
  if (cmd !== 'run') return { kind: 'usage-error', message: `unknown command '${cmd}'` };
  if (files.length === 0) return { kind: 'usage-error', message: 'run needs a workload file' };
  if (files.length > 1) {
    return { kind: 'usage-error', message: `run takes one workload file, not ${files.length}` };
  }
  return { kind: 'run', file: files[0]!, ...(values.dir !== undefined ? { dir: values.dir } : {}) };
}

/** The version in pilotfish's package.json, found from this file (in dist/ or src/, installed or not). */
export function packageVersion(from: string = __dirname): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'pilotfish' && pkg.version !== undefined) return pkg.version;
    }
    if (path.dirname(dir) === dir) throw new Error(`no package.json of pilotfish above ${from}`);
  }
}
