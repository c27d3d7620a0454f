import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import { withTimeout } from '../../src/lib/deferred';

/** A client script run as a child process (so a test can kill it with SIGKILL). */
export interface ClientChild {
  proc: ChildProcess;
  /** Resolves with the next JSON line the script prints (rejects after `timeoutMs`). */
  next(what: string, timeoutMs?: number): Promise<unknown>;
  exit: Promise<number | null>;
}

/**
 * Runs `script` with `args` under Node; its stderr goes to ours. `wrap`: a command that runs
 * Node (e.g. `['unshare', '-m']`), which must exec it (the child's pid is then Node's).
 */
export function clientChild(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  wrap: string[] = [],
): ClientChild {
  const argv = [...wrap, process.execPath, script, ...args];
  const proc = spawn(argv[0]!, argv.slice(1), {
    stdio: ['ignore', 'pipe', 'inherit'],
    env,
  });
  const lines = createInterface({ input: proc.stdout });
  const queue: string[] = [];
  const waiting: ((l: string) => void)[] = [];
  lines.on('line', (l) => (waiting.length > 0 ? waiting.shift()!(l) : queue.push(l)));
  const exit = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return {
    proc,
    exit,
    next: (what, timeoutMs = 120_000) =>
      withTimeout(
        new Promise<string>((resolve) =>
          queue.length > 0 ? resolve(queue.shift()!) : waiting.push(resolve),
        ),
        timeoutMs,
        what,
      ).then((l) => JSON.parse(l) as unknown),
  };
}

/** The agent pids the journals of the sessions under `root` name. */
export function agentPids(root: string): number[] {
  const pids: number[] = [];
  for (const d of readdirSync(root)) {
    let text: string;
    try {
      text = readFileSync(path.join(root, d, 'journal.jsonl'), 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n')) {
      if (!line.includes('"t":"agent"')) continue;
      const pid = (JSON.parse(line) as { pid?: number }).pid;
      if (pid !== undefined) pids.push(pid);
    }
  }
  return pids;
}

/** How the journal of the session in `dir` says `pilot`'s agent can be found (pid, job id). */
export function agentTrace(dir: string, pilot: string): { pid?: number; jobId?: string } {
  const trace: { pid?: number; jobId?: string } = {};
  for (const line of readFileSync(path.join(dir, 'journal.jsonl'), 'utf8').split('\n')) {
    if (!line.includes('"t":"agent"')) continue;
    const e = JSON.parse(line) as { pilot: string; pid?: number; jobId?: string };
    if (e.pilot !== pilot) continue;
    if (e.pid !== undefined) trace.pid = e.pid;
    if (e.jobId !== undefined) trace.jobId = e.jobId;
  }
  return trace;
}

/** A failed run leaves an agent waiting for its client: kill it (pids from the journals). */
export function killAgents(root: string): void {
  for (const pid of agentPids(root)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}
