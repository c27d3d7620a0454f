import { describe, expect, it } from '@jest/globals';
import {
  jobState,
  renderScript,
  type PbsJob,
} from '../../../../../src/components/pilot-launcher/batch/pbs';
import type { PilotDescription } from '../../../../../src/generated';

// No PBS server exists on the machines this project is tested on: the script and the state
// mapping are checked here only, against PBS Pro's documentation (qsub, qstat -x -f -F json).

const AGENT = ['/usr/bin/node', '/opt/pf/main.js', '/scratch/p/agent.json'];

function render(d: Partial<PilotDescription>): string {
  return renderScript({
    pilot: { uid: 'pilot.0000', description: { resource: 'pbs', ...d }, sandbox: '/scratch/p' },
    agentCommand: AGENT,
  });
}

describe('PBS Pro job script', () => {
  it('renders a full example exactly', () => {
    const script = renderScript({
      pilot: {
        uid: 'pilot.0007',
        sandbox: '/lus/s1/pilot.0007',
        description: {
          resource: 'pbs',
          nodes: 2,
          cores: 64,
          gpus: 4,
          runtimeMin: 30,
          queue: 'prod',
          account: 'CSC42',
          directives: ['-l filesystems=home:eagle', '-m n'],
        },
      },
      agentCommand: ['/usr/bin/node', '/opt/pf/main.js', '/lus/s1/pilot.0007/agent.json'],
      env: { PF_MODE: 'batch' },
    });
    expect(script).toBe(
      [
        '#!/bin/bash',
        '#PBS -N pf-pilot.0007',
        '#PBS -l select=2:ncpus=64:ngpus=4',
        '#PBS -l place=scatter:excl',
        '#PBS -l walltime=00:32:00',
        '#PBS -q prod',
        '#PBS -A CSC42',
        '#PBS -o /lus/s1/pilot.0007/job.out',
        '#PBS -e /lus/s1/pilot.0007/job.err',
        '#PBS -r n',
        '#PBS -l filesystems=home:eagle',
        '#PBS -m n',
        "# pilotfish pilot pilot.0007: walltime = runtimeMin + 2 min for the agent's own drain",
        'export PF_MODE=batch',
        'cd /lus/s1/pilot.0007 || exit 1',
        'exec /usr/bin/node /opt/pf/main.js /lus/s1/pilot.0007/agent.json',
        '',
      ].join('\n'),
    );
  });

  it('asks whole nodes without ncpus when cores per node is not given', () => {
    expect(render({ nodes: 3 })).toContain(
      '#PBS -l select=3\n#PBS -l place=scatter:excl\n#PBS -l walltime=01:02:00\n',
    );
  });

  it('asks one chunk of cores (with GPUs and memory) when nodes is absent', () => {
    expect(render({ cores: 8, gpus: 1, memMb: 2048 })).toContain(
      '#PBS -l select=1:ncpus=8:ngpus=1:mem=2048mb\n#PBS -l place=pack\n',
    );
    expect(render({})).toContain('#PBS -l select=1:ncpus=1\n');
  });
});

describe('PBS job state → pilot', () => {
  const job = (state: string, extra: Partial<PbsJob> = {}): PbsJob => ({
    jobId: '1234.pbs01',
    state,
    ...extra,
  });

  it.each<[string, Partial<PbsJob>, object]>([
    ['Q', {}, { phase: 'queued', reason: 'job 1234.pbs01 is queued (Q)' }],
    [
      'Q',
      { comment: 'Not Running: Insufficient amount of resource: ncpus' },
      {
        phase: 'queued',
        reason:
          'job 1234.pbs01 is queued (Q) (Not Running: Insufficient amount of resource: ncpus)',
      },
    ],
    [
      'Q',
      { comment: 'Can Never Run: Insufficient amount of queue resource: nodect (3 > 2)' },
      {
        phase: 'ended',
        final: 'FAILED',
        reason:
          'job 1234.pbs01 can never start: Can Never Run: Insufficient amount of queue resource: nodect (3 > 2)',
      },
    ],
    ['T', {}, { phase: 'queued' }],
    ['H', {}, { phase: 'queued', reason: 'job 1234.pbs01 is held (H)' }],
    ['W', {}, { phase: 'queued', reason: 'job 1234.pbs01 waits for its start time (W)' }],
    ['R', {}, { phase: 'running', reason: 'job 1234.pbs01 is running (R)' }],
    ['E', {}, { phase: 'running', reason: 'job 1234.pbs01 is running (E)' }],
    ['S', {}, { phase: 'running', reason: 'job 1234.pbs01 is suspended (S)' }],
    ['F', { exitStatus: 0 }, { phase: 'ended', final: 'DONE', reason: 'job 1234.pbs01 finished' }],
    [
      'F',
      { exitStatus: 271, comment: 'Job deleted by user alice' },
      {
        phase: 'ended',
        final: 'CANCELED',
        reason: 'job 1234.pbs01 was deleted (qdel): Job deleted by user alice',
      },
    ],
    [
      'F',
      { exitStatus: -29 },
      { phase: 'ended', final: 'FAILED', reason: 'job 1234.pbs01 exceeded its walltime' },
    ],
    [
      'F',
      { exitStatus: 271, comment: 'job killed: walltime 1900 exceeded limit 1800' },
      {
        phase: 'ended',
        final: 'FAILED',
        reason:
          'job 1234.pbs01 exceeded its walltime (job killed: walltime 1900 exceeded limit 1800)',
      },
    ],
    [
      'F',
      { exitStatus: 265 },
      { phase: 'ended', final: 'FAILED', reason: 'job 1234.pbs01 was killed by signal 9' },
    ],
    [
      'F',
      { exitStatus: -1 },
      {
        phase: 'ended',
        final: 'FAILED',
        reason: 'job 1234.pbs01 could not be run by PBS (Exit_status=-1)',
      },
    ],
    [
      'F',
      { exitStatus: 2 },
      { phase: 'ended', final: 'FAILED', reason: 'job 1234.pbs01 exited with code 2' },
    ],
    [
      'F',
      {},
      { phase: 'ended', final: 'FAILED', reason: 'job 1234.pbs01 finished without an exit status' },
    ],
    ['X', { exitStatus: 0 }, { phase: 'ended', final: 'DONE' }],
    ['Z', {}, { phase: 'running', reason: 'job 1234.pbs01 is in PBS state Z' }],
  ])('%s %j', (state, extra, expected) => {
    expect(jobState(job(state, extra))).toMatchObject(expected);
  });
});
