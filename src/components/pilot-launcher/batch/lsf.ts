import {
  directivePath,
  jobName,
  scriptTail,
  shapeOf,
  userDirective,
  walltimeMinutes,
  type JobView,
  type RenderInput,
} from './common';

/**
 * IBM Spectrum LSF: the pilot's job script (`bsub < job.sh`: bsub reads the #BSUB lines of a
 * script given on stdin) and the meaning of a job's state (`bjobs -o "jobid stat exit_code
 * exit_reason pend_reason" -json <id>`) for the pilot. Pure.
 *
 * There is no LSF cluster on the machines this project is tested on: rendering and mapping are
 * unit-tested only, against LSF's documented behaviour, and no launcher submits these scripts
 * yet (an LSF pilot fails with E_UNSUPPORTED).
 */

/**
 * The job script. `nodes` → `-n` slots spread `ptile` per host, and `-x` (exclusive: the job
 * holds the hosts whole); with `cores` given too, `-n nodes×cores` and `ptile=cores`, else one
 * slot per host (`-n nodes`, `ptile=1`). No `nodes` → `-n cores` that LSF places. `gpus` is per
 * host (`-gpu "num=N"`). `-W` takes minutes. `-rn`: never rerun (a rerun job would start a
 * second agent for a pilot that already ended). memMb is not rendered: LSF's memory unit is
 * a site setting (LSF_UNIT_FOR_LIMITS); add `-M`/`-R rusage[mem=...]` through `directives`.
 */
export function renderScript(input: RenderInput): string {
  const { pilot } = input;
  const d = pilot.description;
  const shape = shapeOf(d);
  const lines = ['#!/bin/bash', `#BSUB -J ${jobName(pilot.uid)}`];
  if (shape.kind === 'nodes') {
    const ptile = shape.coresPerNode ?? 1;
    lines.push(`#BSUB -n ${shape.nodes * ptile}`, `#BSUB -R "span[ptile=${ptile}]"`, '#BSUB -x');
  } else {
    lines.push(`#BSUB -n ${shape.cores}`);
  }
  if (shape.gpusPerNode > 0) lines.push(`#BSUB -gpu "num=${shape.gpusPerNode}"`);
  lines.push(`#BSUB -W ${walltimeMinutes(d)}`);
  if (d.queue !== undefined) lines.push(`#BSUB -q ${userDirective(d.queue)}`);
  if (d.account !== undefined) lines.push(`#BSUB -P ${userDirective(d.account)}`);
  lines.push(
    `#BSUB -o ${directivePath(`${pilot.sandbox}/job.out`, 'sandbox')}`,
    `#BSUB -e ${directivePath(`${pilot.sandbox}/job.err`, 'sandbox')}`,
    '#BSUB -rn',
  );
  for (const x of d.directives ?? []) lines.push(`#BSUB ${userDirective(x)}`);
  lines.push(
    `# pilotfish pilot ${pilot.uid}: walltime = runtimeMin + 2 min for the agent's own drain`,
    ...scriptTail(input),
  );
  return `${lines.join('\n')}\n`;
}

/** The fields of one job that a launcher reads (bjobs -o ... -json). */
export interface LsfJob {
  jobId: string;
  /** STAT: PEND PROV PSUSP WAIT RUN USUSP SSUSP DONE EXIT ZOMBI UNKWN. */
  stat: string;
  exitCode?: number;
  /** EXIT_REASON, e.g. "TERM_OWNER: job killed by owner", "TERM_RUNLIMIT: job killed after reaching LSF run time limit". */
  exitReason?: string;
  pendReason?: string;
}

/** Exit reasons of a job someone killed with bkill (its owner or an administrator). */
const KILLED = /^TERM_(OWNER|ADMIN|FORCE_OWNER|FORCE_ADMIN)\b/;

/** What an LSF job's state means for its pilot. */
export function jobState(job: LsfJob): JobView {
  const id = job.jobId;
  const pend = job.pendReason !== undefined && job.pendReason !== '' ? `: ${job.pendReason}` : '';
  switch (job.stat) {
    case 'PEND':
    case 'WAIT':
    case 'PROV':
      return { phase: 'queued', reason: `job ${id} is ${job.stat}${pend}` };
    case 'PSUSP':
      return { phase: 'queued', reason: `job ${id} is suspended while pending (PSUSP)${pend}` };
    case 'RUN':
      return { phase: 'running', reason: `job ${id} is RUN` };
    case 'USUSP':
    case 'SSUSP':
      return { phase: 'running', reason: `job ${id} is suspended (${job.stat})` };
    case 'UNKWN':
      // mbatchd lost contact with the execution host; it may come back
      return { phase: 'running', reason: `job ${id} is UNKWN (LSF lost contact with its host)` };
    case 'DONE':
      return { phase: 'ended', final: 'DONE', reason: `job ${id} is DONE` };
    case 'EXIT':
    case 'ZOMBI': {
      const why = job.exitReason !== undefined && job.exitReason !== '' ? job.exitReason : '';
      if (KILLED.test(why)) {
        return {
          phase: 'ended',
          final: 'CANCELED',
          reason: `job ${id} was killed (bkill): ${why}`,
        };
      }
      const code = job.exitCode !== undefined ? `exit code ${job.exitCode}` : 'no exit code';
      return {
        phase: 'ended',
        final: 'FAILED',
        reason: `job ${id} ended ${job.stat} (${code}${why !== '' ? `, ${why}` : ''})`,
      };
    }
    default:
      return { phase: 'running', reason: `job ${id} is in LSF state ${job.stat}` };
  }
}
