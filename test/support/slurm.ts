import { describe } from '@jest/globals';
import { execFile, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { TimeoutError } from '../../src/errors';

/**
 * The private Slurm cluster of scripts/slurm-up.sh (run by `npm test`). Tests that need it are
 * written with {@link describeSlurm}: they run when the cluster is up and are reported skipped,
 * with the reason in the title, when it is not (not root, packages missing).
 */
export interface SlurmEnv {
  /** Path of the lab's slurm.conf: pass it in the environment of sbatch, squeue, scontrol … */
  SLURM_CONF: string;
}

export const SLURM_SKIPPED = ' (skipped: no Slurm cluster; run scripts/slurm-up.sh as root)';

/** The lab directory, as slurm-up.sh picks it. */
export function slurmLab(): string {
  return process.env.PILOTFISH_SLURM_LAB || '/tmp/pilotfish-slurm';
}

let cached: { env: SlurmEnv | undefined } | undefined;

/**
 * `{ SLURM_CONF }` of the lab cluster, read from `$PILOTFISH_SLURM_LAB/env.sh` (slurm-up.sh
 * writes it once the nodes answer, slurm-down.sh removes it); undefined when that file is
 * missing, sbatch is not on PATH or slurmctld does not answer a ping. Checked once per process.
 */
export function slurmEnv(): SlurmEnv | undefined {
  cached ??= { env: probe() };
  return cached.env;
}

function probe(): SlurmEnv | undefined {
  let text: string;
  try {
    text = fs.readFileSync(path.join(slurmLab(), 'env.sh'), 'utf8');
  } catch {
    return undefined;
  }
  const conf = /^export SLURM_CONF=(\S+)$/m.exec(text)?.[1];
  if (conf === undefined || !fs.existsSync(conf) || !onPath('sbatch')) return undefined;
  const ping = spawnSync('scontrol', ['ping'], {
    env: { ...process.env, SLURM_CONF: conf },
    encoding: 'utf8',
    timeout: 5_000,
  });
  return ping.status === 0 && /is UP/.test(ping.stdout) ? { SLURM_CONF: conf } : undefined;
}

function onPath(cmd: string): boolean {
  return (process.env.PATH ?? '')
    .split(':')
    .some((d) => d !== '' && fs.existsSync(path.join(d, cmd)));
}

/**
 * `describe` when the lab cluster is up; otherwise the same suite registered as skipped, its
 * title ending in {@link SLURM_SKIPPED}. Inside, get the environment with {@link slurmEnv}.
 */
export function describeSlurm(title: string, fn: () => void): void {
  if (slurmEnv() !== undefined) describe(title, fn);
  else describe.skip(`${title}${SLURM_SKIPPED}`, fn);
}

/** Runs a Slurm command with the lab's SLURM_CONF; resolves with stdout, rejects with stderr. */
export function slurmCommand(
  slurm: SlurmEnv,
  cmd: string,
  args: readonly string[],
  timeoutMs = 10_000,
): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      cmd,
      args,
      { env: { ...process.env, ...slurm }, encoding: 'utf8', timeout: timeoutMs },
      (err, stdout, stderr) => {
        if (err) {
          reject(new Error(`${cmd} ${args.join(' ')} failed: ${stderr.trim() || err.message}`));
        } else {
          resolve(stdout);
        }
      },
    );
  });
}

/** Submits a batch job (`sbatch --parsable …`) and resolves with its id. */
export async function sbatch(slurm: SlurmEnv, args: readonly string[]): Promise<string> {
  const out = await slurmCommand(slurm, 'sbatch', ['--parsable', ...args]);
  const id = /^(\d+)/.exec(out.trim())?.[1];
  if (id === undefined) throw new Error(`sbatch printed no job id: '${out.trim()}'`);
  return id;
}

export interface JobEnd {
  /** Final JobState: COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY … */
  state: string;
  /** ExitCode as Slurm prints it: `code:signal`. */
  exitCode: string;
}

const RUNNING_STATES = new Set([
  'PENDING',
  'CONFIGURING',
  'RUNNING',
  'COMPLETING',
  'SUSPENDED',
  'REQUEUED',
  'RESIZING',
  'SIGNALING',
  'STAGE_OUT',
  'STOPPED',
]);

/**
 * Resolves once the job has ended and its processes are gone (its JobState is final, not
 * COMPLETING), or rejects with a TimeoutError. Slurm has no push notification for this (and
 * `sbatch --wait` looks only every 2, then 8 s), so it asks `scontrol show job` every 100 ms;
 * the lab keeps finished jobs visible for MinJobAge=300 s.
 */
export async function waitForJobEnd(
  slurm: SlurmEnv,
  jobId: string,
  timeoutMs: number,
): Promise<JobEnd> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const out = await slurmCommand(slurm, 'scontrol', ['-o', 'show', 'job', jobId]);
    const state = /\bJobState=(\S+)/.exec(out)?.[1];
    const exitCode = /\bExitCode=(\S+)/.exec(out)?.[1] ?? '?';
    if (state === undefined) throw new Error(`scontrol show job ${jobId} gave no JobState`);
    if (!RUNNING_STATES.has(state)) return { state, exitCode };
    if (Date.now() > deadline) {
      throw new TimeoutError(`Slurm job ${jobId} still ${state} after ${timeoutMs} ms`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Cancels the job (if it still runs) and waits until it has ended. */
export async function cancelJob(slurm: SlurmEnv, jobId: string, timeoutMs = 15_000): Promise<void> {
  await slurmCommand(slurm, 'scancel', [jobId]);
  await waitForJobEnd(slurm, jobId, timeoutMs);
}
