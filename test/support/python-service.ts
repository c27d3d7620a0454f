import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startServe, type LiveService } from './serve';

/** Debian's python3, which the Python client's tests and their workers run with. */
export const PYTHON = '/usr/bin/python3';

/** The repository's Python client (python/pilotfish) and its tests (python/tests). */
export const PYTHON_DIR = path.resolve(__dirname, '../../python');

/** Why the Python client cannot be tested here (undefined: it can). */
export function pythonClientMissing(): string | undefined {
  const r = spawnSync(PYTHON, ['-c', 'import msgpack, cloudpickle'], { encoding: 'utf8' });
  if (r.error !== undefined) return `${PYTHON}: ${r.error.message}`;
  return r.status === 0
    ? undefined
    : `${PYTHON} lacks msgpack or cloudpickle (scripts/system-deps.sh installs them)`;
}

/** `pilotfish serve` in a temporary directory, its local pilot's workers on Debian's python3. */
export async function servePythonReady(prefix: string): Promise<{ dir: string; s: LiveService }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  const pilots = path.join(dir, 'pilots.json');
  writeFileSync(pilots, JSON.stringify([{ resource: 'local', agent: { python: PYTHON } }]));
  return { dir, s: await startServe(path.join(dir, 'svc'), ['--pilots', pilots]) };
}

export interface PythonRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
}

/** Runs `python3 args` in `cwd` with the service's URL and token in its environment. */
export function runPython(
  s: LiveService,
  args: string[],
  opts: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<PythonRun> {
  return new Promise((resolve) => {
    const proc = spawn(PYTHON, args, {
      cwd: opts.cwd,
      env: {
        ...process.env,
        ...opts.env,
        PILOTFISH_URL: s.url,
        PILOTFISH_TOKEN: s.token,
        PYTHONDONTWRITEBYTECODE: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    proc.stdout.on('data', (d: Buffer) => (output += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (output += d.toString()));
    // a run past its time is killed and reported, never left to hang the suite
    const timer = setTimeout(() => proc.kill('SIGKILL'), opts.timeoutMs);
    proc.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output });
    });
  });
}
