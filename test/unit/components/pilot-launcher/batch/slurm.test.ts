import { describe, expect, it } from '@jest/globals';
import {
  exitOf,
  jobState,
  neverStarts,
  parseScontrolJob,
  renderScript,
  slurmJobOf,
  type SlurmJob,
} from '../../../../../src/components/pilot-launcher/batch/slurm';
import type { PilotDescription } from '../../../../../src/generated';

const AGENT = [
  '/usr/bin/node',
  '/opt/pf/dist/src/agent/main.js',
  '/scratch/s1/pilot.0000/agent.json',
];

function render(d: Partial<PilotDescription>, sandbox = '/scratch/s1/pilot.0000'): string {
  return renderScript({
    pilot: { uid: 'pilot.0000', description: { resource: 'slurm', ...d }, sandbox },
    agentCommand: AGENT,
  });
}

describe('Slurm job script', () => {
  it('renders a full example exactly', () => {
    const script = renderScript({
      pilot: {
        uid: 'pilot.0003',
        sandbox: '/scratch/s1/pilot.0003',
        description: {
          resource: 'slurm',
          nodes: 4,
          cores: 32,
          gpus: 2,
          runtimeMin: 90,
          queue: 'gpu',
          account: 'proj42',
          directives: ['--constraint=a100', '--qos=high'],
        },
      },
      agentCommand: [
        '/usr/bin/node',
        '/opt/pf/dist/src/agent/main.js',
        '/scratch/s1/pilot.0003/agent.json',
      ],
      env: { PF_NOTE: "it's here", PATH: '/usr/bin:/bin' },
    });
    expect(script).toBe(
      [
        '#!/bin/bash',
        '#SBATCH --job-name=pf-pilot.0003',
        '#SBATCH --nodes=4',
        '#SBATCH --exclusive',
        '#SBATCH --mem=0',
        '#SBATCH --mincpus=32',
        '#SBATCH --gpus-per-node=2',
        '#SBATCH --time=01:32:00',
        '#SBATCH --partition=gpu',
        '#SBATCH --account=proj42',
        '#SBATCH --output=/scratch/s1/pilot.0003/job.out',
        '#SBATCH --error=/scratch/s1/pilot.0003/job.err',
        '#SBATCH --no-requeue',
        '#SBATCH --constraint=a100',
        '#SBATCH --qos=high',
        "# pilotfish pilot pilot.0003: walltime = runtimeMin + 2 min for the agent's own drain",
        "export PF_NOTE='it'\\''s here'",
        'export PATH=/usr/bin:/bin',
        'cd /scratch/s1/pilot.0003 || exit 1',
        'exec /usr/bin/node /opt/pf/dist/src/agent/main.js /scratch/s1/pilot.0003/agent.json',
        '',
      ].join('\n'),
    );
  });

  it('asks cores that Slurm places when nodes is absent, and no whole nodes', () => {
    const s = render({ cores: 6, memMb: 4096 });
    expect(s).toContain('#SBATCH --ntasks=6\n#SBATCH --mem=4096M\n');
    expect(s).not.toMatch(/--nodes|--exclusive|--mem=0|--gpus/);
  });

  it('defaults to one task and a walltime of 60 + 2 min, rounding runtimeMin up', () => {
    expect(render({})).toContain('#SBATCH --ntasks=1\n');
    expect(render({})).toContain('#SBATCH --time=01:02:00\n');
    expect(render({ runtimeMin: 0.5 })).toContain('#SBATCH --time=00:03:00\n');
    expect(render({ runtimeMin: 48 * 60 })).toContain('#SBATCH --time=48:02:00\n');
  });

  it('quotes the sandbox and the command for the shell', () => {
    const s = renderScript({
      pilot: { uid: 'p', description: { resource: 'slurm' }, sandbox: '/scratch/x' },
      agentCommand: ['/opt/my node/node', 'a;rm -rf /', '$(id)', ''],
    });
    expect(s).toContain("exec '/opt/my node/node' 'a;rm -rf /' '$(id)' ''\n");
  });

  it('refuses a sandbox that a directive line cannot hold, and a multi-line directive', () => {
    expect(() => render({}, '/scratch/my dir')).toThrow(/cannot be used in a batch directive/);
    expect(() => render({}, '/scratch/%j')).toThrow(/cannot be used in a batch directive/);
    expect(() => render({ directives: ['--qos=x\nrm -rf ~'] })).toThrow(/must be one line/);
  });
});

describe('scontrol show job -o', () => {
  // as printed by Slurm 22.05 on the project's lab cluster (trimmed)
  const LINE =
    'JobId=6 JobName=pf-pilot.0000 UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901755 ' +
    'Nice=0 Account=(null) QOS=(null) JobState=PENDING Reason=PartitionNodeLimit Dependency=(null) ' +
    'Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:00 TimeLimit=00:07:00 ' +
    'AllocNode:Sid=localhost:2836 ReqNodeList=(null) NumNodes=3-3 NumCPUs=3 CPUs/Task=1 ' +
    'Command=/scratch/my job/job.sh WorkDir=/tmp/srx StdErr=/tmp/srx/job.err Power= ';

  it('splits into fields, keeping values with blanks', () => {
    const f = parseScontrolJob(LINE);
    expect(f.JobId).toBe('6');
    expect(f.JobState).toBe('PENDING');
    expect(f['AllocNode:Sid']).toBe('localhost:2836');
    expect(f['CPUs/Task']).toBe('1');
    expect(f.Command).toBe('/scratch/my job/job.sh');
    expect(f.Power).toBe('');
  });

  it('reads the job the launcher follows', () => {
    expect(slurmJobOf(LINE)).toEqual({
      jobId: '6',
      state: 'PENDING',
      reason: 'PartitionNodeLimit',
      exitCode: '0:0',
    });
    expect(slurmJobOf('')).toBeUndefined();
    expect(slurmJobOf('slurm_load_jobs error: Invalid job id specified')).toBeUndefined();
  });

  it('splits ExitCode', () => {
    expect(exitOf('0:0')).toEqual({ code: 0, signal: null });
    expect(exitOf('1:0')).toEqual({ code: 1, signal: null });
    expect(exitOf('0:9')).toEqual({ code: 0, signal: 9 });
    expect(exitOf('')).toEqual({ code: null, signal: null });
  });
});

describe('Slurm job state → pilot', () => {
  const job = (state: string, reason = 'None', exitCode = '0:0'): SlurmJob => ({
    jobId: '12',
    state,
    reason,
    exitCode,
  });

  it.each([
    ['PENDING', 'Resources', { phase: 'queued', reason: 'job 12 is PENDING (Reason=Resources)' }],
    ['PENDING', 'Priority', { phase: 'queued', reason: 'job 12 is PENDING (Reason=Priority)' }],
    ['CONFIGURING', 'None', { phase: 'queued', reason: 'job 12 is CONFIGURING' }],
    ['REQUEUED', 'None', { phase: 'queued', reason: 'job 12 is REQUEUED' }],
    ['RUNNING', 'None', { phase: 'running', reason: 'job 12 is RUNNING' }],
    ['COMPLETING', 'None', { phase: 'running', reason: 'job 12 is COMPLETING' }],
    ['SUSPENDED', 'None', { phase: 'running', reason: 'job 12 is SUSPENDED' }],
    ['COMPLETED', 'None', { phase: 'ended', final: 'DONE', reason: 'job 12 COMPLETED' }],
    [
      'CANCELLED',
      'None',
      { phase: 'ended', final: 'CANCELED', reason: 'job 12 was cancelled (scancel)' },
    ],
    [
      'CANCELLED by 0',
      'None',
      { phase: 'ended', final: 'CANCELED', reason: 'job 12 was cancelled (scancel)' },
    ],
    [
      'FAILED',
      'NonZeroExitCode',
      {
        phase: 'ended',
        final: 'FAILED',
        reason: 'job 12 ended FAILED (Reason=NonZeroExitCode, ExitCode=0:0)',
      },
    ],
    [
      'TIMEOUT',
      'TimeLimit',
      {
        phase: 'ended',
        final: 'FAILED',
        reason: 'job 12 ended TIMEOUT (Reason=TimeLimit, ExitCode=0:0)',
      },
    ],
    [
      'NODE_FAIL',
      'None',
      { phase: 'ended', final: 'FAILED', reason: 'job 12 ended NODE_FAIL (ExitCode=0:0)' },
    ],
    ['OUT_OF_MEMORY', 'OutOfMemory', { phase: 'ended', final: 'FAILED' }],
    ['BOOT_FAIL', 'None', { phase: 'ended', final: 'FAILED' }],
    ['DEADLINE', 'None', { phase: 'ended', final: 'FAILED' }],
    ['PREEMPTED', 'None', { phase: 'ended', final: 'FAILED' }],
    [
      'SOMETHING_NEW',
      'None',
      { phase: 'running', reason: 'job 12 is in Slurm state SOMETHING_NEW' },
    ],
  ] as const)('%s (Reason=%s)', (state, reason, expected) => {
    expect(jobState(job(state, reason))).toMatchObject(expected);
  });

  it('carries the exit code of a failed job', () => {
    expect(jobState(job('FAILED', 'NonZeroExitCode', '3:0')).reason).toBe(
      'job 12 ended FAILED (Reason=NonZeroExitCode, ExitCode=3:0)',
    );
  });

  it.each([
    'PartitionConfig',
    'PartitionNodeLimit',
    'PartitionTimeLimit',
    'AccountNotAllowed',
    'QOSNotAllowed',
    'InvalidAccount',
    'InvalidQOS',
    'BadConstraints',
    'DependencyNeverSatisfied',
    'QOSMaxNodePerJobLimit',
    'QOSMaxWallDurationPerJobLimit',
    'QOSMaxCpuPerJobLimit',
    'AssocMaxNodesPerJobLimit',
    'AssocMaxWallDurationPerJobLimit',
  ])('fails a PENDING job that can never start: %s', (reason) => {
    expect(neverStarts(reason)).toBe(true);
    expect(jobState(job('PENDING', reason))).toEqual({
      phase: 'ended',
      final: 'FAILED',
      reason: `job 12 can never start: Slurm keeps it PENDING with Reason=${reason}`,
    });
  });

  it.each([
    'None',
    'Resources',
    'Priority',
    'ReqNodeNotAvail,_UnavailableNodes:n1',
    'PartitionDown',
    'JobHeldUser',
    'JobHeldAdmin',
    'BeginTime',
    'Dependency',
    'QOSGrpCpuLimit',
    'QOSMaxJobsPerUserLimit',
    'AssocGrpNodeLimit',
  ])('keeps waiting for a PENDING job with %s', (reason) => {
    expect(neverStarts(reason)).toBe(false);
    expect(jobState(job('PENDING', reason)).phase).toBe('queued');
  });
});
