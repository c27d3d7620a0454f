import type { PilotDescription } from '../../../generated';
import { UsageError } from '../../../errors';
import type { FinalPilotState } from '../../../states/pilot-model';

/**
 * What the three batch renderers (slurm.ts, pbs.ts, lsf.ts) share: the pilot's shape, the
 * walltime, shell quoting and the script's tail. Pure: no I/O.
 */

/** What a renderer needs of a pilot (a PilotRecord fits). */
export interface BatchPilot {
  uid: string;
  description: PilotDescription;
  sandbox: string;
}

export interface RenderInput {
  pilot: BatchPilot;
  /** The argv the job execs in the sandbox (the agent: node, main.js, agent.json). */
  agentCommand: string[];
  /** Exported before the exec, in this order. */
  env?: Record<string, string>;
  /**
   * Times the script starts the agent again when it dies (agent.restarts; default 0: it execs
   * the agent). An exit 0 (a clean end), 2 (a bad config) or 3 (it could not start) is final.
   */
  restarts?: number;
}

/** How a batch job is doing, in the pilot's words. */
export interface JobView {
  phase: 'queued' | 'running' | 'ended';
  /** Set when phase is 'ended'. */
  final?: FinalPilotState;
  reason: string;
}

/**
 * Minutes added to runtimeMin for the batch walltime. The agent stops itself at runtimeMin
 * (drains its tasks, flushes its notifications, exits 0: the pilot ends DONE); the margin
 * leaves it that time before the batch system kills the job, which would end it FAILED.
 */
export const DRAIN_MARGIN_MIN = 2;

/** Batch walltime in whole minutes: runtimeMin (default 60) rounded up, plus the margin. */
export function walltimeMinutes(d: PilotDescription): number {
  return Math.ceil(d.runtimeMin ?? 60) + DRAIN_MARGIN_MIN;
}

/** `HH:MM:SS` (Slurm --time, PBS walltime); hours may exceed 24. */
export function hms(minutes: number): string {
  const h = Math.floor(minutes / 60);
  const m = minutes % 60;
  return `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}:00`;
}

/**
 * What the pilot asks: `nodes` whole nodes (with `cores` read as cores per node when both are
 * given), or, without `nodes`, `cores` in all (default 1) that the batch system places.
 */
export type Shape =
  | { kind: 'nodes'; nodes: number; coresPerNode?: number; gpusPerNode: number }
  | { kind: 'cores'; cores: number; gpusPerNode: number };

export function shapeOf(d: PilotDescription): Shape {
  const gpusPerNode = d.gpus ?? 0;
  if (d.nodes !== undefined) {
    return d.cores !== undefined
      ? { kind: 'nodes', nodes: d.nodes, coresPerNode: d.cores, gpusPerNode }
      : { kind: 'nodes', nodes: d.nodes, gpusPerNode };
  }
  return { kind: 'cores', cores: d.cores ?? 1, gpusPerNode };
}

/**
 * Cores and GPUs a batch pilot holds before its agent reports in: whole nodes hold nodes ×
 * cores per node (`cores` when given with `nodes`, else `cpusPerNode`, what the batch system
 * says, else 1) and nodes × `gpus`; without `nodes`, `cores` (default 1) and `gpus` (per
 * node: one node is assumed).
 */
export function batchCapacity(
  d: PilotDescription,
  cpusPerNode: number | undefined,
): { cores: number; gpus: number } {
  const shape = shapeOf(d);
  if (shape.kind === 'cores') return { cores: shape.cores, gpus: shape.gpusPerNode };
  return {
    cores: shape.nodes * (shape.coresPerNode ?? cpusPerNode ?? 1),
    gpus: shape.nodes * shape.gpusPerNode,
  };
}

const SAFE = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** Quotes one word for a POSIX shell: bare when it is safe, else in single quotes. */
export function shQuote(word: string): string {
  if (SAFE.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * Batch systems read their directive lines without a shell: a path with blanks, quotes or
 * `%` (a filename pattern for Slurm and LSF) would be cut or rewritten. Refuse it.
 */
export function directivePath(p: string, what: string): string {
  if (!/^[^\s'"\\%$`]+$/.test(p)) {
    throw new UsageError(
      `${what} '${p}' cannot be used in a batch directive: it must not contain blanks, quotes, '%', '$', '\\' or '\`'`,
    );
  }
  return p;
}

/** A user directive goes in as is, but one line: a newline would inject another command. */
export function userDirective(d: string): string {
  if (/[\r\n]/.test(d)) {
    throw new UsageError(`batch directive ${JSON.stringify(d)} must be one line`);
  }
  return d;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The script after the directives: environment, `cd` to the sandbox, `exec` the agent. */
export function scriptTail(input: RenderInput): string[] {
  const { pilot, agentCommand, env = {} } = input;
  if (agentCommand.length === 0) throw new UsageError('agentCommand must not be empty');
  const lines: string[] = [];
  for (const [k, v] of Object.entries(env)) {
    if (!ENV_NAME.test(k)) throw new UsageError(`environment name '${k}' is not a shell name`);
    lines.push(`export ${k}=${shQuote(v)}`);
  }
  lines.push(`cd ${shQuote(pilot.sandbox)} || exit 1`);
  const agent = agentCommand.map(shQuote).join(' ');
  const restarts = input.restarts ?? 0;
  if (restarts <= 0) {
    lines.push(`exec ${agent}`);
    return lines;
  }
  // no exec: the script stays to start a dead agent again (a crash, a SIGKILL, the OOM killer),
  // and the new one takes over from the journal its predecessor kept in the sandbox; a cancel
  // (SIGTERM to this script) goes on to the agent, which ends as it would have
  lines.push(
    'stop=0 n=0 pid=',
    `trap 'stop=1; [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null' TERM INT`,
    'while :; do',
    `  PILOTFISH_AGENT_RESTART=$n ${agent} &`,
    '  pid=$!',
    '  rc=0; wait "$pid" || rc=$?',
    '  while kill -0 "$pid" 2>/dev/null; do rc=0; wait "$pid" || rc=$?; done',
    '  if [ "$stop" = 1 ]; then exit "$rc"; fi',
    '  case $rc in 0 | 2 | 3) exit "$rc" ;; esac',
    `  if [ "$n" -ge ${restarts} ]; then`,
    `    echo "pilotfish: the agent died (exit $rc), started again ${restarts} times: giving up" >&2`,
    '    exit "$rc"',
    '  fi',
    '  n=$((n + 1))',
    `  echo "pilotfish: the agent died (exit $rc): starting it again ($n of ${restarts})" >&2`,
    'done',
  );
  return lines;
}

/** Job name of a pilot's batch job. */
export function jobName(uid: string): string {
  return `pf-${uid}`;
}
