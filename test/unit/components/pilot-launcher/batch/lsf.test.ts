import { describe, expect, it } from '@jest/globals';
import {
  jobState,
  renderScript,
  type LsfJob,
} from '../../../../../src/components/pilot-launcher/batch/lsf';
import type { PilotDescription } from '../../../../../src/generated';

// No LSF cluster exists on the machines this project is tested on: the script and the state
// mapping are checked here only, against LSF's documentation (bsub, bjobs -o ... -json).

function render(d: Partial<PilotDescription>): string {
  return renderScript({
    pilot: { uid: 'pilot.0000', description: { resource: 'lsf', ...d }, sandbox: '/gpfs/p' },
    agentCommand: ['/usr/bin/node', '/opt/pf/main.js', '/gpfs/p/agent.json'],
  });
}

describe('LSF job script', () => {
  it('renders a full example exactly', () => {
    const script = renderScript({
      pilot: {
        uid: 'pilot.0001',
        sandbox: '/gpfs/alpine/s1/pilot.0001',
        description: {
          resource: 'lsf',
          nodes: 2,
          cores: 42,
          gpus: 6,
          runtimeMin: 120,
          queue: 'batch',
          account: 'BIF123',
          directives: ['-alloc_flags smt4'],
        },
      },
      agentCommand: [
        '/sw/node-20/bin/node',
        '/opt/pf/main.js',
        '/gpfs/alpine/s1/pilot.0001/agent.json',
      ],
    });
    expect(script).toBe(
      [
        '#!/bin/bash',
        '#BSUB -J pf-pilot.0001',
        '#BSUB -n 84',
        '#BSUB -R "span[ptile=42]"',
        '#BSUB -x',
        '#BSUB -gpu "num=6"',
        '#BSUB -W 122',
        '#BSUB -q batch',
        '#BSUB -P BIF123',
        '#BSUB -o /gpfs/alpine/s1/pilot.0001/job.out',
        '#BSUB -e /gpfs/alpine/s1/pilot.0001/job.err',
        '#BSUB -rn',
        '#BSUB -alloc_flags smt4',
        "# pilotfish pilot pilot.0001: walltime = runtimeMin + 2 min for the agent's own drain",
        'cd /gpfs/alpine/s1/pilot.0001 || exit 1',
        'exec /sw/node-20/bin/node /opt/pf/main.js /gpfs/alpine/s1/pilot.0001/agent.json',
        '',
      ].join('\n'),
    );
  });

  it('asks one slot per host, exclusive, when cores per node is not given', () => {
    expect(render({ nodes: 3 })).toContain('#BSUB -n 3\n#BSUB -R "span[ptile=1]"\n#BSUB -x\n');
  });

  it('asks cores that LSF places when nodes is absent', () => {
    const s = render({ cores: 12 });
    expect(s).toContain('#BSUB -n 12\n#BSUB -W 62\n');
    expect(s).not.toMatch(/span|-x|-gpu/);
  });
});

describe('LSF job state → pilot', () => {
  const job = (stat: string, extra: Partial<LsfJob> = {}): LsfJob => ({
    jobId: '4711',
    stat,
    ...extra,
  });

  it.each<[string, Partial<LsfJob>, object]>([
    [
      'PEND',
      { pendReason: 'New job is waiting for scheduling' },
      { phase: 'queued', reason: 'job 4711 is PEND: New job is waiting for scheduling' },
    ],
    ['WAIT', {}, { phase: 'queued', reason: 'job 4711 is WAIT' }],
    ['PROV', {}, { phase: 'queued' }],
    ['PSUSP', {}, { phase: 'queued', reason: 'job 4711 is suspended while pending (PSUSP)' }],
    ['RUN', {}, { phase: 'running', reason: 'job 4711 is RUN' }],
    ['USUSP', {}, { phase: 'running', reason: 'job 4711 is suspended (USUSP)' }],
    ['SSUSP', {}, { phase: 'running' }],
    ['UNKWN', {}, { phase: 'running' }],
    ['DONE', { exitCode: 0 }, { phase: 'ended', final: 'DONE', reason: 'job 4711 is DONE' }],
    [
      'EXIT',
      { exitCode: 130, exitReason: 'TERM_OWNER: job killed by owner' },
      {
        phase: 'ended',
        final: 'CANCELED',
        reason: 'job 4711 was killed (bkill): TERM_OWNER: job killed by owner',
      },
    ],
    [
      'EXIT',
      { exitCode: 130, exitReason: 'TERM_ADMIN: job killed by root or LSF administrator' },
      { phase: 'ended', final: 'CANCELED' },
    ],
    [
      'EXIT',
      {
        exitCode: 140,
        exitReason: 'TERM_RUNLIMIT: job killed after reaching LSF run time limit',
      },
      {
        phase: 'ended',
        final: 'FAILED',
        reason:
          'job 4711 ended EXIT (exit code 140, TERM_RUNLIMIT: job killed after reaching LSF run time limit)',
      },
    ],
    [
      'EXIT',
      { exitCode: 1 },
      { phase: 'ended', final: 'FAILED', reason: 'job 4711 ended EXIT (exit code 1)' },
    ],
    [
      'ZOMBI',
      {},
      { phase: 'ended', final: 'FAILED', reason: 'job 4711 ended ZOMBI (no exit code)' },
    ],
    ['NEWSTATE', {}, { phase: 'running', reason: 'job 4711 is in LSF state NEWSTATE' }],
  ])('%s %j', (stat, extra, expected) => {
    expect(jobState(job(stat, extra))).toMatchObject(expected);
  });
});
