import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { withTimeout } from '../../src/lib/deferred';

/** The built CLI, as `npm install` puts it on PATH. */
export const CLI = path.resolve(__dirname, '../../dist/src/cli/main.js');

/** What `pilotfish run` says first on stderr: its session and where it is. */
export const SESSION_LINE = /^pilotfish: session pf\.\S+ \(.+\)\n$/;

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI to its end in a real child process. */
export function runCli(args: string[]): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The built CLI running in a child process, for a test that signals it while it works. */
export interface LiveCli {
  proc: ChildProcess;
  /** Resolves with the first match of `pattern` in its stderr so far or to come. */
  stderrMatch(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** The same on its stdout. */
  stdoutMatch(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Its end: exit code (null when a signal ended it), stdout and stderr. */
  result: Promise<CliResult & { signal: NodeJS.Signals | null }>;
}

/** Starts the built CLI with `args` (environment: `env`, default ours). */
export function startCli(args: string[], env: NodeJS.ProcessEnv = process.env): LiveCli {
  const proc = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  const text = { stdout: '', stderr: '' };
  const watchers: (() => void)[] = [];
  for (const name of ['stdout', 'stderr'] as const) {
    proc[name].on('data', (d: Buffer) => {
      text[name] += d.toString();
      for (const w of [...watchers]) w();
    });
  }
  const result = new Promise<CliResult & { signal: NodeJS.Signals | null }>((resolve, reject) => {
    proc.on('error', reject);
    proc.on('close', (code, signal) => resolve({ code, signal, ...text }));
  });
  const match =
    (name: 'stdout' | 'stderr') =>
    (pattern: RegExp, timeoutMs = 60_000): Promise<RegExpMatchArray> =>
      withTimeout(
        new Promise<RegExpMatchArray>((resolve) => {
          const check = (): void => {
            const m = pattern.exec(text[name]);
            if (m === null) return;
            watchers.splice(watchers.indexOf(check), 1);
            resolve(m);
          };
          watchers.push(check);
          check();
        }),
        timeoutMs,
        `${pattern} on the CLI's ${name}`,
      );
  return { proc, result, stderrMatch: match('stderr'), stdoutMatch: match('stdout') };
}
