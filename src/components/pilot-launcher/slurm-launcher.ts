import { execFile } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import * as os from 'node:os';
import type { AgentConfig, PilotDescription } from '../../generated';
import { errorMeta } from '../../errors';
import { compiledSibling } from '../../lib/dist-path';
import type { Logger } from '../../lib/logger';
import { readTail } from '../../lib/file-tail';
import { batchCapacity } from './batch/common';
import { exitOf, jobState, renderScript, slurmJobOf } from './batch/slurm';
import type { JobEnd } from './core';
import type { Capacity, LaunchEvents, PilotLauncher } from './launcher';
import type { PilotRecord } from './pilot-record';
import { PRIVATE_FILE, PRIVATE_SCRIPT, makePrivateDirAsync } from '../../lib/private-files';

export interface SlurmLauncherOptions {
  /** Poll period when the description has no `launcher.pollMs` (default 1000 ms). */
  pollMs?: number;
  /** Environment of sbatch, scontrol and scancel (default: ours, so SLURM_CONF and PATH). */
  env?: NodeJS.ProcessEnv;
  /** Gives up on a job after this long without an answer from Slurm (default 5 min). */
  lostAfterMs?: number;
}

interface Job {
  uid: string;
  sandbox: string;
  pollMs: number;
  id?: string;
  timer?: NodeJS.Timeout;
  killRequested: boolean;
  started: boolean;
  done: boolean;
  lastView?: string;
  failingSince?: number;
}

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
  error?: Error;
}

/** How many times the job script starts a dead agent again, unless agent.restarts says. */
const DEFAULT_RESTARTS = 3;

/** Every Slurm command gets this long; a hung slurmctld must not hang the client. */
const COMMAND_TIMEOUT_MS = 60_000;

/**
 * Runs pilots as Slurm batch jobs. It reports `launched` with the job id once sbatch accepted
 * the job (queued), `launchFailed` with sbatch's stderr verbatim, `jobStarted` when the job
 * leaves the queue, and `jobEnded` when it ends, can never start (then it was scancel'd), or
 * Slurm lost it. `launch` writes agent.json and job.sh (batch/slurm.ts)
 * into the pilot sandbox, submits with `sbatch --parsable job.sh`, then follows the job with
 * `scontrol show job -o <id>` every pollMs until it ends. The agent's own `agent_ready`
 * message, not the poll, is what makes the pilot ACTIVE; the poll only sees the queue and the
 * end. `kill` is `scancel <id>`.
 *
 * The job runs `<this node's process.execPath> <dist/src/agent/main.js> <sandbox>/agent.json`:
 * the compute nodes must have Node 20 at the same path and see the built package and the
 * sandbox at the same paths (a shared filesystem), and reach the client's addresses over TCP
 * (docs/deployment.md).
 */
export class SlurmLauncher implements PilotLauncher {
  private readonly jobs = new Map<string, Job>();
  private readonly agentMain = compiledSibling(__dirname, '../../agent/main');
  private readonly env: NodeJS.ProcessEnv;
  private closed = false;

  constructor(
    private readonly events: LaunchEvents,
    private readonly log: Logger,
    private readonly options: SlurmLauncherOptions = {},
  ) {
    this.env = options.env ?? process.env;
  }

  /**
   * Whole nodes without `cores` hold what sinfo says a node of their partition has (asked once
   * per partition and bulk), else 1 core per node; see batchCapacity.
   */
  async capacities(descriptions: PilotDescription[]): Promise<Capacity[]> {
    const perNode = new Map<string, number | undefined>();
    for (const d of descriptions) {
      if (d.nodes === undefined || d.cores !== undefined) continue;
      const key = d.queue ?? '';
      if (perNode.has(key)) continue;
      const n = await sinfoCpusPerNode(d.queue, this.env);
      perNode.set(key, n);
      if (n === undefined) {
        this.log.warn('sinfo cannot say how many CPUs a node has: counting 1 per node', {
          partition: d.queue ?? '(default)',
        });
      }
    }
    return descriptions.map((d) => batchCapacity(d, perNode.get(d.queue ?? '')));
  }

  /** The agent finds its nodes from the job's environment; stdin is not ours in a batch job. */
  agentConfig(pilot: PilotRecord, common: AgentConfig): AgentConfig {
    const mpi = pilot.description.agent?.mpi;
    return {
      ...common,
      gpus: pilot.description.gpus ?? 0,
      resource: 'slurm',
      watchStdin: false,
      // the batch script starts a dead agent again; the next one takes over (agent.restarts)
      restarts: pilot.description.agent?.restarts ?? DEFAULT_RESTARTS,
      ...(mpi !== undefined ? { mpi } : {}),
    };
  }

  /** Starts following the pilot's job (`id`: known already, for an adopted one). */
  private track(pilot: PilotRecord, from: { id?: string; started: boolean }): Job {
    const job: Job = {
      uid: pilot.uid,
      sandbox: pilot.sandbox,
      pollMs: pilot.description.launcher?.pollMs ?? this.options.pollMs ?? 1_000,
      ...from,
      killRequested: false,
      done: false,
    };
    this.jobs.set(pilot.uid, job);
    return job;
  }

  launch(pilot: PilotRecord, cfg: AgentConfig): void {
    const job = this.track(pilot, { started: false });
    void this.submit(pilot, cfg, job).catch((e: unknown) => {
      this.log.error('slurm launch failed', { pilot: pilot.uid, ...errorMeta(e) });
      this.fail(job, (e as Error).message);
    });
  }

  /** `scancel` the pilot's job; one still being submitted is cancelled once sbatch answers. */
  kill(uid: string): void {
    const job = this.jobs.get(uid);
    if (job === undefined || job.done) return;
    job.killRequested = true;
    if (job.id !== undefined) void this.scancel(job);
  }

  /** Follows the job of a pilot submitted by a previous client of the session (resume). */
  adopt(pilot: PilotRecord, trace: { jobId?: string }): void {
    const jobId = trace.jobId;
    if (jobId === undefined) return; // no job was submitted: the core failed the pilot
    const job = this.track(pilot, { id: jobId, started: pilot.state === 'PMGR_ACTIVE' });
    this.schedule(job);
  }

  /** The Slurm job id of a pilot, once sbatch gave one. */
  jobId(uid: string): string | undefined {
    return this.jobs.get(uid)?.id;
  }

  /** Stops following every job (the session is closing; pilots were ended before). */
  close(): void {
    this.closed = true;
    for (const job of this.jobs.values()) clearTimeout(job.timer);
    this.jobs.clear();
  }

  private async submit(pilot: PilotRecord, cfg: AgentConfig, job: Job): Promise<void> {
    await makePrivateDirAsync(pilot.sandbox);
    const cfgFile = `${pilot.sandbox}/agent.json`;
    await fsp.writeFile(cfgFile, JSON.stringify(cfg, null, 2), { mode: PRIVATE_FILE });
    const script = renderScript({
      pilot,
      // relative: the job runs in the sandbox, and the command line (ps) names no session
      agentCommand: [process.execPath, this.agentMain, 'agent.json'],
      restarts: cfg.restarts ?? 0,
    });
    await fsp.writeFile(`${pilot.sandbox}/job.sh`, script, { mode: PRIVATE_SCRIPT });
    const r = await this.run('sbatch', ['--parsable', 'job.sh'], pilot.sandbox);
    if (r.code !== 0) {
      // sbatch's own words, verbatim: they say what to change (partition, nodes, account...)
      const said = r.stderr.trim();
      return this.fail(job, said !== '' ? withConfigHint(said) : commandError('sbatch', r));
    }
    // --parsable prints "<id>" or "<id>;<cluster>"
    const id = r.stdout.trim().split(';')[0] ?? '';
    if (!/^\d+(_\d+)?$/.test(id)) {
      return this.fail(job, `sbatch printed no job id: ${JSON.stringify(r.stdout.trim())}`);
    }
    job.id = id;
    this.log.info('pilot job submitted', { pilot: job.uid, jobId: id });
    this.events.launched(job.uid, { jobId: id });
    if (job.killRequested) void this.scancel(job);
    this.schedule(job);
  }

  private fail(job: Job, message: string): void {
    job.done = true;
    this.jobs.delete(job.uid);
    this.events.launchFailed(job.uid, { message });
  }

  private schedule(job: Job): void {
    if (this.closed || job.done) return;
    job.timer = setTimeout(() => {
      void this.poll(job).catch((e: unknown) => {
        this.log.error('slurm poll failed', { pilot: job.uid, ...errorMeta(e) });
        this.schedule(job);
      });
    }, job.pollMs);
  }

  private async poll(job: Job): Promise<void> {
    const id = job.id!;
    const r = await this.run('scontrol', ['show', 'job', '-o', id], job.sandbox);
    if (this.closed || job.done) return;
    if (r.code !== 0) {
      if (/Invalid job id/i.test(r.stderr)) {
        // purged: it ended more than MinJobAge ago, between two polls (a very long pause)
        return this.end(job, {
          final: 'FAILED',
          message: `job ${id} is no longer known to Slurm (it ended, state unknown)`,
          exitCode: null,
          signal: null,
        });
      }
      return this.retryOrLose(job, commandError('scontrol', r));
    }
    const sj = slurmJobOf(r.stdout);
    if (sj === undefined) {
      return this.retryOrLose(job, `scontrol printed no job: ${JSON.stringify(r.stdout.trim())}`);
    }
    delete job.failingSince;
    const view = jobState(sj);
    if (view.reason !== job.lastView) {
      job.lastView = view.reason;
      this.log.info('pilot job', {
        pilot: job.uid,
        jobId: id,
        phase: view.phase,
        slurm: view.reason,
      });
    }
    if (view.phase === 'running' && !job.started) {
      job.started = true;
      this.events.jobStarted(job.uid);
    }
    if (view.phase !== 'ended') return this.schedule(job);
    // a job that can never start is still PENDING: take it out of the queue
    if (sj.state === 'PENDING') await this.scancel(job);
    const exit = exitOf(sj.exitCode);
    await this.end(job, {
      final: view.final!,
      message: view.reason,
      exitCode: exit.code,
      signal: exit.signal !== null ? signalName(exit.signal) : null,
    });
  }

  private retryOrLose(job: Job, message: string): Promise<void> {
    const now = Date.now();
    job.failingSince ??= now;
    const lostAfter = this.options.lostAfterMs ?? 300_000;
    if (now - job.failingSince >= lostAfter) {
      return this.end(job, {
        final: 'FAILED',
        message: `lost track of job ${job.id}: no answer from Slurm for ${Math.round((now - job.failingSince) / 1000)} s: ${message}`,
        exitCode: null,
        signal: null,
      });
    }
    this.log.warn('slurm poll failed, retrying', { pilot: job.uid, jobId: job.id, message });
    this.schedule(job);
    return Promise.resolve();
  }

  private async end(job: Job, end: Omit<JobEnd, 'stderr'>): Promise<void> {
    job.done = true;
    clearTimeout(job.timer);
    this.jobs.delete(job.uid);
    const stderr = await readTail(`${job.sandbox}/job.err`, 1_024);
    this.log.info('pilot job ended', { pilot: job.uid, jobId: job.id, final: end.final });
    this.events.jobEnded(job.uid, { ...end, stderr });
  }

  private async scancel(job: Job): Promise<void> {
    const r = await this.run('scancel', [job.id!], job.sandbox);
    if (r.code !== 0) {
      this.log.warn('scancel failed', { pilot: job.uid, jobId: job.id, stderr: r.stderr.trim() });
    }
  }

  private run(cmd: string, args: string[], cwd: string): Promise<Ran> {
    return new Promise((resolve) => {
      execFile(
        cmd,
        args,
        { cwd, env: this.env, timeout: COMMAND_TIMEOUT_MS, encoding: 'utf8' },
        (error, stdout, stderr) => {
          if (error === null) return resolve({ code: 0, stdout, stderr });
          const code = typeof error.code === 'number' ? error.code : null;
          resolve({ code: code ?? -1, stdout, stderr, error });
        },
      );
    });
  }
}

/**
 * CPUs per node of a partition (the default one when `partition` is undefined), from `sinfo`;
 * the least when nodes differ; undefined when Slurm cannot say.
 */
export function sinfoCpusPerNode(
  partition: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number | undefined> {
  const args = ['--noheader', '--format=%c %P'];
  if (partition !== undefined) args.push(`--partition=${partition}`);
  return new Promise((resolve) => {
    execFile('sinfo', args, { env, timeout: COMMAND_TIMEOUT_MS, encoding: 'utf8' }, (e, out) => {
      if (e !== null) return resolve(undefined);
      const rows = out
        .trim()
        .split('\n')
        .map((l) => l.trim().split(/\s+/))
        .filter((r) => r.length >= 2);
      // without a partition: the default one, which sinfo marks with '*'
      const pick = partition !== undefined ? rows : rows.filter((r) => r[1]!.endsWith('*'));
      const cpus = pick.map((r) => parseInt(r[0]!, 10)).filter((n) => Number.isFinite(n) && n > 0);
      resolve(cpus.length > 0 ? Math.min(...cpus) : undefined);
    });
  });
}

/**
 * sbatch's words, and where it found no Slurm to talk to (no SLURM_CONF, no
 * /etc/slurm/slurm.conf, no DNS SRV record: `resolve_ctls_from_dns_srv`, `Could not establish a
 * configuration source`), what to do about it.
 */
export function withConfigHint(said: string): string {
  if (!/resolve_ctls_from_dns_srv|Could not establish a configuration source/.test(said)) {
    return said;
  }
  return (
    `${said}\n(sbatch found no Slurm cluster: set SLURM_CONF to its slurm.conf in the ` +
    "environment of the session's process; to try a Slurm pilot on this one machine, " +
    '`sudo npx pilotfish lab start` starts a lab cluster and prints the SLURM_CONF to export)'
  );
}

function commandError(cmd: string, r: Ran): string {
  const err = r.error as NodeJS.ErrnoException | undefined;
  if (err?.code === 'ENOENT') {
    return `${cmd} not found (spawn ${cmd} ENOENT): Slurm's client commands must be on PATH`;
  }
  const said = r.stderr.trim();
  return said !== '' ? said : `${cmd} failed: ${err?.message ?? `exit ${r.code}`}`;
}

function signalName(n: number): string {
  const hit = Object.entries(os.constants.signals).find(([, v]) => v === n);
  return hit !== undefined ? hit[0] : `signal ${n}`;
}
