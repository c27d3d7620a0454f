import { execFile } from 'node:child_process';

/**
 * When the Slurm job this agent runs in ends (epoch ms), from `scontrol show job -o` (its
 * EndTime, in the controller's local time, which is this node's); undefined outside a job, when
 * the job has no end (UNLIMITED), or when scontrol cannot say (the reason goes to `warn`).
 */
export function slurmJobEnd(
  env: NodeJS.ProcessEnv,
  warn: (message: string) => void,
): Promise<number | undefined> {
  const job = env.SLURM_JOB_ID;
  if (job === undefined || job === '') return Promise.resolve(undefined);
  return new Promise((resolve) => {
    execFile('scontrol', ['show', 'job', '-o', job], { timeout: 10_000 }, (err, stdout) => {
      if (err !== null) {
        warn(`cannot read the end of Slurm job ${job} (scontrol: ${err.message.trim()})`);
        return resolve(undefined);
      }
      resolve(parseEndTime(stdout));
    });
  });
}

/** EndTime=2026-11-24T20:16:40 of a `scontrol show job -o` line, as epoch ms (local time). */
export function parseEndTime(line: string): number | undefined {
  const m = /(?:^|\s)EndTime=(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\s|$)/.exec(line);
  if (m === null) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1).map(Number);
  return new Date(y!, mo! - 1, d, h, mi, s).getTime();
}
