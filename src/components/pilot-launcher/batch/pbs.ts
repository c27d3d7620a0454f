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
 * PBS Pro (OpenPBS): the pilot's job script (`qsub job.sh`) and the meaning of a job's state
 * (`qstat -x -f -F json <id>`: job_state, Exit_status, comment) for the pilot. Pure.
 *
 * There is no PBS server on the machines this project is tested on: rendering and mapping are
 * unit-tested only, against PBS Pro's documented behaviour, and no launcher submits these
 * scripts yet (a PBS pilot fails with E_UNSUPPORTED).
 */

/**
 * The job script. `nodes` → `select=N` chunks, one per node (`place=scatter:excl`: every chunk
 * on its own node, which the job holds whole; `cores`, if also given, is `ncpus` per chunk);
 * no `nodes` → one chunk of `cores` CPUs (`place=pack`), since a chunk is where PBS puts
 * GPUs. `gpus` is per node (`ngpus` per chunk). `-r n`: never rerun (a rerun job would start a
 * second agent for a pilot that already ended).
 */
export function renderScript(input: RenderInput): string {
  const { pilot } = input;
  const d = pilot.description;
  const shape = shapeOf(d);
  const lines = ['#!/bin/bash', `#PBS -N ${jobName(pilot.uid)}`];
  const gpus = shape.gpusPerNode > 0 ? `:ngpus=${shape.gpusPerNode}` : '';
  if (shape.kind === 'nodes') {
    const ncpus = shape.coresPerNode !== undefined ? `:ncpus=${shape.coresPerNode}` : '';
    lines.push(`#PBS -l select=${shape.nodes}${ncpus}${gpus}`, '#PBS -l place=scatter:excl');
  } else {
    const mem = d.memMb !== undefined ? `:mem=${d.memMb}mb` : '';
    lines.push(`#PBS -l select=1:ncpus=${shape.cores}${gpus}${mem}`, '#PBS -l place=pack');
  }
  lines.push(`#PBS -l walltime=${hms(walltimeMinutes(d))}`);
  if (d.queue !== undefined) lines.push(`#PBS -q ${userDirective(d.queue)}`);
  if (d.account !== undefined) lines.push(`#PBS -A ${userDirective(d.account)}`);
  lines.push(
    `#PBS -o ${directivePath(`${pilot.sandbox}/job.out`, 'sandbox')}`,
    `#PBS -e ${directivePath(`${pilot.sandbox}/job.err`, 'sandbox')}`,
    '#PBS -r n',
  );
  for (const x of d.directives ?? []) lines.push(`#PBS ${userDirective(x)}`);
  lines.push(
    `# pilotfish pilot ${pilot.uid}: walltime = runtimeMin + 2 min for the agent's own drain`,
    ...scriptTail(input),
  );
  return `${lines.join('\n')}\n`;
}

/** The fields of one job that a launcher reads (qstat -x -f -F json). */
export interface PbsJob {
  jobId: string;
  /** job_state: Q H W T M R E S U B F X. */
  state: string;
  /** Exit_status, once the job finished. */
  exitStatus?: number;
  /** The scheduler's comment, e.g. "Can Never Run: ...", "Job run at ...". */
  comment?: string;
}

/** PBS Pro's Exit_status for a job killed for exceeding its walltime (JOB_EXEC_KILL_WALLTIME). */
const KILL_WALLTIME = -29;

/** What a PBS job's state means for its pilot. */
export function jobState(job: PbsJob): JobView {
  const id = job.jobId;
  const comment = job.comment !== undefined && job.comment !== '' ? ` (${job.comment})` : '';
  switch (job.state) {
    case 'Q':
    case 'T':
    case 'M':
      // PBS Pro's scheduler marks a job no node can ever hold; it would stay queued forever
      if (job.comment !== undefined && /^Can Never Run/i.test(job.comment)) {
        return {
          phase: 'ended',
          final: 'FAILED',
          reason: `job ${id} can never start: ${job.comment}`,
        };
      }
      return { phase: 'queued', reason: `job ${id} is queued (${job.state})${comment}` };
    case 'H':
      return { phase: 'queued', reason: `job ${id} is held (H)${comment}` };
    case 'W':
      return { phase: 'queued', reason: `job ${id} waits for its start time (W)${comment}` };
    case 'R':
    case 'E':
    case 'B':
      return { phase: 'running', reason: `job ${id} is running (${job.state})` };
    case 'S':
    case 'U':
      return { phase: 'running', reason: `job ${id} is suspended (${job.state})${comment}` };
    case 'F':
    case 'X':
      return finished(job);
    default:
      return { phase: 'running', reason: `job ${id} is in PBS state ${job.state}${comment}` };
  }
}

function finished(job: PbsJob): JobView {
  const id = job.jobId;
  const st = job.exitStatus;
  const comment = job.comment ?? '';
  if (st === 0) return { phase: 'ended', final: 'DONE', reason: `job ${id} finished` };
  if (/deleted|qdel/i.test(comment)) {
    return {
      phase: 'ended',
      final: 'CANCELED',
      reason: `job ${id} was deleted (qdel): ${comment}`,
    };
  }
  const fail = (what: string): JobView => ({
    phase: 'ended',
    final: 'FAILED',
    reason: `job ${id} ${what}${comment !== '' ? ` (${comment})` : ''}`,
  });
  if (st === KILL_WALLTIME || /walltime/i.test(comment)) return fail('exceeded its walltime');
  if (st === undefined) return fail('finished without an exit status');
  if (st > 256) return fail(`was killed by signal ${st - 256}`);
  if (st < 0) return fail(`could not be run by PBS (Exit_status=${st})`);
  return fail(`exited with code ${st}`);
}
