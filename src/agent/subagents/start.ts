import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AgentConfig } from '../../generated';
import { systemClock } from '../../lib/clock';
import { compiledSibling } from '../../lib/dist-path';
import type { Logger } from '../../lib/logger';
import type { LaunchOptions } from '../../components/executor/launch';
import type { RemoteHandlers, RemoteJob, RemoteRunner } from '../../components/executor/shell';
import { SubAgentHubShell, type LaunchedSubAgent } from './hub-shell';

const SUBAGENT_MAIN = compiledSibling(__dirname, './main');

/**
 * The step's own process: runs the sub-agent, and starts it again when it dies (a crash, a
 * SIGKILL), so that the step, and the tasks in it, live on; an exit 0 (asked to end, or its hub
 * gone) or 2 (bad arguments) ends the step, as do too many deaths.
 */
export const SUPERVISOR = [
  'n=0',
  'while :; do',
  '  "$@"; rc=$?',
  '  if [ "$rc" -eq 0 ] || [ "$rc" -eq 2 ]; then exit "$rc"; fi',
  '  n=$((n + 1))',
  '  if [ "$n" -gt 5 ]; then echo "pf-subagent: died $n times, last $rc: giving up" >&2; exit "$rc"; fi',
  '  echo "pf-subagent: exited $rc, starting it again ($n)" >&2',
  'done',
].join('\n');

/** Whether this pilot runs per-node sub-agents here; else why not (said once, as a warning). */
export function subAgentsHere(
  cfg: AgentConfig,
  launch: Pick<LaunchOptions, 'srun'>,
  configFile: string | undefined,
): { on: false; warning?: string } | { on: true; srun: string; configFile: string } {
  if ((cfg.subAgents ?? 'none') === 'none') return { on: false };
  if (launch.srun === undefined) {
    return {
      on: false,
      warning: "agent.subAgents 'per-node' needs a Slurm allocation: tasks start from the agent",
    };
  }
  if (configFile === undefined) {
    return {
      on: false,
      warning: 'sub-agents need the agent config file: tasks start from the agent',
    };
  }
  return { on: true, srun: launch.srun.executable, configFile };
}

export interface SubAgentsStart {
  cfg: AgentConfig;
  configFile: string;
  srun: string;
  nodes: readonly { name: string; cores: number }[];
  /** Where sub-agents reach this agent's node. */
  host: string | undefined;
  log: Logger;
  silent?(parts: { part: string; since: number }[]): void;
  nodeLost?(node: string, why: string): void;
  /**
   * This agent was started again in the allocation (agent.restarts): the hub binds where the
   * one before it did, and the sub-agents' steps left running are followed, not started again.
   */
  restarted?: boolean;
}

/** Where the hub listens, kept in the sandbox for an agent started again. */
const HUB_ADDRESS = 'hub.address';

/** The Executor's RemoteRunner: a hub bound on this node, a sub-agent on every node. */
export function subAgentRunner(
  s: SubAgentsStart,
): (h: RemoteHandlers, adopted: RemoteJob[]) => Promise<RemoteRunner> {
  return async (handlers, adopted) => {
    const dir = path.join(s.cfg.sandbox, 'subagents');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const cores = new Map(s.nodes.map((n) => [n.name, n.cores]));
    const host = s.host ?? os.hostname();
    const before = s.restarted === true ? boundBefore(dir) : undefined;
    const hub = await SubAgentHubShell.start({
      session: s.cfg.session,
      pilot: s.cfg.pilot,
      nodes: s.nodes.map((n) => n.name),
      ...(s.cfg.curve !== undefined ? { curve: s.cfg.curve } : {}),
      bind: before ?? 'tcp://*:*',
      advertise: host,
      adopted,
      clock: systemClock,
      log: s.log.child({ component: 'SubAgentHub' }),
      launch: (node, address) =>
        (s.restarted === true ? stepLeft(dir, node) : undefined) ??
        srunSubAgent(s, dir, node, cores.get(node) ?? 1, address),
      ...handlers,
      silent: (parts) => s.silent?.(parts),
      nodeLost: (node, why) => s.nodeLost?.(node, why),
    });
    writeFileSync(path.join(dir, HUB_ADDRESS), hub.bound, { mode: 0o600 });
    s.log.info('sub-agents starting', { hub: hub.address, nodes: s.nodes.length });
    return hub;
  };
}

/** The address the hub of the agent before this one bound (`tcp://*:PORT`), if it said. */
function boundBefore(dir: string): string | undefined {
  try {
    const a = readFileSync(path.join(dir, HUB_ADDRESS), 'utf8').trim();
    return /^tcp:\/\/[^\s]+:\d+$/.test(a) ? a : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The step of `node`'s sub-agent that the agent before this one started, if it still runs
 * (its srun, by the pid it left): followed until it ends, killed by pid.
 */
function stepLeft(dir: string, node: string): LaunchedSubAgent | undefined {
  let pid: number;
  try {
    pid = Number(readFileSync(path.join(dir, `${node}.step.pid`), 'utf8'));
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 1 || !isStepOf(pid, node)) return undefined;
  const ended = new Promise<string>((resolve) => {
    const t = setInterval(() => {
      if (isStepOf(pid, node)) return;
      clearInterval(t);
      resolve(`srun ${pid} (started by the agent before) ended`);
    }, 1_000);
    t.unref();
  });
  return { ended, kill: () => void killQuietly(pid) };
}

/** Whether `pid` is the srun of `node`'s sub-agent step (not a pid used again since). */
function isStepOf(pid: number, node: string): boolean {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return argv.includes(`--job-name=pf-subagent-${node}`);
  } catch {
    return false;
  }
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone already
  }
}

/**
 * One srun step on `node` for the pilot's life: the supervisor running the sub-agent, with the
 * node's CPUs and no memory reserved (--overlap: tasks' own steps share them).
 */
function srunSubAgent(
  s: SubAgentsStart,
  dir: string,
  node: string,
  cores: number,
  address: string,
): LaunchedSubAgent {
  const out = openSync(path.join(dir, `${node}.step.log`), 'a', 0o600);
  const args = [
    `--job-name=pf-subagent-${node}`,
    '--nodes=1',
    '--ntasks=1',
    `--nodelist=${node}`,
    `--cpus-per-task=${Math.max(1, cores)}`,
    '--overlap',
    '--mem=0',
    '--kill-on-bad-exit=0',
    '--export=ALL',
    '/bin/sh',
    '-c',
    SUPERVISOR,
    'pf-subagent',
    process.execPath,
    SUBAGENT_MAIN,
    s.configFile,
    node,
    address,
  ];
  // its own process group, its output to a file: the step outlives an agent that dies (a
  // SIGKILL, a crash), for the next agent of the pilot to take over (agent.restarts)
  const child = spawn(s.srun, args, { stdio: ['ignore', out, out], detached: true });
  closeSync(out);
  if (child.pid !== undefined) {
    writeFileSync(path.join(dir, `${node}.step.pid`), String(child.pid), { mode: 0o600 });
  }
  const ended = new Promise<string>((resolve) => {
    child.once('error', (e) => resolve(`srun could not start: ${e.message}`));
    child.once('exit', (code, signal) =>
      resolve(signal !== null ? `srun ended by ${signal}` : `srun exited ${code}`),
    );
  });
  return { ended, kill: () => child.kill('SIGKILL') };
}
