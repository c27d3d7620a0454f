import {
  directivePath,
  hms,
  jobName,
  scriptTail,
  shapeOf,
  userDirective,
  walltimeMinutes,
  type JobView,
  type RenderInput,
} from './common';

/**
 * Slurm: the pilot's job script (sbatch) and the meaning of `scontrol show job -o` for the
 * pilot. Pure; slurm-launcher.ts does the I/O. Checked against Slurm 22.05 (Debian 12).
 */

/**
 * The job script. `nodes` → that many whole nodes (`--exclusive`, `--mem=0`: every core and
 * all memory; `cores`, if also given, is the least CPUs each node must have); no `nodes` →
 * `--ntasks=<cores>` that Slurm places. `gpus` is per node. `--no-requeue`: a requeued job
 * would start a second agent for a pilot that already ended.
 */
export function renderScript(input: RenderInput): string {
  const { pilot } = input;
  const d = pilot.description;
  const shape = shapeOf(d);
  const out = `${pilot.sandbox}/job.out`;
  const err = `${pilot.sandbox}/job.err`;
  const lines = ['#!/bin/bash', `#SBATCH --job-name=${jobName(pilot.uid)}`];
  if (shape.kind === 'nodes') {
    lines.push(`#SBATCH --nodes=${shape.nodes}`, '#SBATCH --exclusive', '#SBATCH --mem=0');
    if (shape.coresPerNode !== undefined) lines.push(`#SBATCH --mincpus=${shape.coresPerNode}`);
  } else {
    lines.push(`#SBATCH --ntasks=${shape.cores}`);
    if (d.memMb !== undefined) lines.push(`#SBATCH --mem=${d.memMb}M`);
  }
  if (shape.gpusPerNode > 0) lines.push(`#SBATCH --gpus-per-node=${shape.gpusPerNode}`);
  lines.push(`#SBATCH --time=${hms(walltimeMinutes(d))}`);
  if (d.queue !== undefined) lines.push(`#SBATCH --partition=${userDirective(d.queue)}`);
  if (d.account !== undefined) lines.push(`#SBATCH --account=${userDirective(d.account)}`);
  lines.push(
    `#SBATCH --output=${directivePath(out, 'sandbox')}`,
    `#SBATCH --error=${directivePath(err, 'sandbox')}`,
    '#SBATCH --no-requeue',
  );
  for (const x of d.directives ?? []) lines.push(`#SBATCH ${userDirective(x)}`);
  lines.push(
    `# pilotfish pilot ${pilot.uid}: walltime = runtimeMin + 2 min for the agent's own drain`,
    ...scriptTail(input),
  );
  return `${lines.join('\n')}\n`;
}

/** The fields of one job that the launcher reads. */
export interface SlurmJob {
  jobId: string;
  /** JobState, e.g. PENDING, RUNNING, CANCELLED. */
  state: string;
  /** Reason, e.g. None, Resources, PartitionNodeLimit, NonZeroExitCode. */
  reason: string;
  /** ExitCode `code:signal` of the batch script. */
  exitCode: string;
}

/**
 * Splits `scontrol show job -o <id>` (one line of `Key=Value` pairs) into its fields. Values
 * may hold blanks (Command=, Comment=): a word that does not start a new `Key=` continues the
 * previous value.
 */
export function parseScontrolJob(line: string): Record<string, string> {
  const fields: Record<string, string> = {};
  let key: string | undefined;
  for (const word of line.trim().split(/\s+/)) {
    const m = /^([A-Za-z][A-Za-z0-9_:/]*)=(.*)$/.exec(word);
    if (m !== null) {
      key = m[1]!;
      fields[key] = m[2]!;
    } else if (key !== undefined) {
      fields[key] += ` ${word}`;
    }
  }
  return fields;
}

/** The job of `scontrol show job -o` output, or undefined when it names none. */
export function slurmJobOf(text: string): SlurmJob | undefined {
  const f = parseScontrolJob(text.split('\n')[0] ?? '');
  if (f.JobId === undefined || f.JobState === undefined) return undefined;
  return {
    jobId: f.JobId,
    state: f.JobState,
    reason: f.Reason ?? 'None',
    exitCode: f.ExitCode ?? '0:0',
  };
}

const QUEUED = new Set([
  'PENDING',
  'CONFIGURING', // nodes are booting
  'REQUEUED',
  'REQUEUE_HOLD',
  'REQUEUE_FED',
  'RESV_DEL_HOLD',
]);
const RUNNING = new Set([
  'RUNNING',
  'COMPLETING',
  'SUSPENDED', // paused by an admin or a preemption; it resumes
  'STOPPED',
  'SIGNALING',
  'STAGE_OUT',
  'RESIZING',
]);
const FAILED = new Set([
  'FAILED',
  'TIMEOUT',
  'NODE_FAIL',
  'OUT_OF_MEMORY',
  'BOOT_FAIL',
  'DEADLINE',
  'PREEMPTED',
  'SPECIAL_EXIT',
  'REVOKED',
]);

/**
 * Pending reasons that no amount of waiting clears: the request breaks a partition's, QOS's or
 * association's per-job limit, or names something the cluster refuses. Slurm leaves such a job
 * pending forever (unless EnforcePartLimits rejects it at submission); the pilot fails with the
 * reason instead. Not here, on purpose: ReqNodeNotAvail (nodes down or reserved come back),
 * PartitionDown/Inactive, held jobs, and group or per-user limits (QOSGrp*, QOSMaxJobsPerUser,
 * AssocGrp*), which clear as other jobs end.
 */
const NEVER = new Set([
  'PartitionConfig',
  'PartitionNodeLimit',
  'PartitionTimeLimit',
  'AccountNotAllowed',
  'QOSNotAllowed',
  'InvalidAccount',
  'InvalidQOS',
  'BadConstraints',
  'DependencyNeverSatisfied',
  'FrontEndDown',
]);
/** Per-job limits of a QOS or an association, e.g. QOSMaxNodePerJobLimit, AssocMaxWallDurationPerJobLimit. */
const NEVER_PATTERN = /^(QOS|Assoc)(Max|Min)\w*PerJob\w*$/;

/** Whether a PENDING job with this Reason can never start. */
export function neverStarts(reason: string): boolean {
  const word = reason.split(/[,\s]/)[0] ?? reason;
  return NEVER.has(word) || NEVER_PATTERN.test(word);
}

/** What a Slurm job's state means for its pilot. */
export function jobState(job: SlurmJob): JobView {
  const state = job.state.replace(/[^A-Z_].*$/, ''); // sacct writes "CANCELLED by 0", "CANCELLED+"
  const why = job.reason !== '' && job.reason !== 'None' ? ` (Reason=${job.reason})` : '';
  if (state === 'PENDING' && neverStarts(job.reason)) {
    return {
      phase: 'ended',
      final: 'FAILED',
      reason: `job ${job.jobId} can never start: Slurm keeps it PENDING with Reason=${job.reason}`,
    };
  }
  if (QUEUED.has(state)) return { phase: 'queued', reason: `job ${job.jobId} is ${state}${why}` };
  if (RUNNING.has(state)) return { phase: 'running', reason: `job ${job.jobId} is ${state}${why}` };
  if (state === 'COMPLETED') {
    return { phase: 'ended', final: 'DONE', reason: `job ${job.jobId} COMPLETED` };
  }
  if (state === 'CANCELLED') {
    return {
      phase: 'ended',
      final: 'CANCELED',
      reason: `job ${job.jobId} was cancelled (scancel)`,
    };
  }
  if (FAILED.has(state)) {
    return {
      phase: 'ended',
      final: 'FAILED',
      reason: `job ${job.jobId} ended ${state} (${why === '' ? '' : `Reason=${job.reason}, `}ExitCode=${job.exitCode})`,
    };
  }
  // a state this code does not know (a newer Slurm): keep following the job, say what it is
  return { phase: 'running', reason: `job ${job.jobId} is in Slurm state ${job.state}${why}` };
}

/** `code:signal` of ExitCode= → numbers. */
export function exitOf(exitCode: string): { code: number | null; signal: number | null } {
  const [c, s] = exitCode.split(':');
  const code = c !== undefined && /^\d+$/.test(c) ? Number(c) : null;
  const sig = s !== undefined && /^\d+$/.test(s) ? Number(s) : null;
  return { code, signal: sig === 0 ? null : sig };
}
