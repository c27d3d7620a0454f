import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  watch,
  writeFileSync,
} from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { JobEnd } from '../../../../src/components/pilot-launcher/core';
import type { PilotRecord } from '../../../../src/components/pilot-launcher/pilot-record';
import { SlurmLauncher } from '../../../../src/components/pilot-launcher/slurm-launcher';
import type { AgentConfig } from '../../../../src/generated';
import { withTimeout } from '../../../../src/lib/deferred';
import { silentLogger } from '../../../../src/lib/logger';
import { pilotIn } from '../../../support/fixtures';

// The SlurmLauncher's own logic (submit, follow, scancel, error paths) against stand-in
// sbatch/scontrol/scancel scripts on PATH, so it is checked on machines without Slurm too.
// The real thing runs in test/integration/slurm/launcher.test.ts.

type Event = string | { ended: string; end: JobEnd };

describe('SlurmLauncher against stand-in Slurm commands', () => {
  let dir: string;
  let bin: string;
  /** Where the real commands the stand-ins use live (cat, sed). */
  let system: string;
  let events: Event[];
  /** Called after each event the launcher reports (see until). */
  let onEvent: (() => void) | undefined;
  let launcher: SlurmLauncher | undefined;

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'pf-slurm-fake-'));
    bin = path.join(dir, 'bin');
    system = ':/usr/bin:/bin';
    events = [];
    writeFileSync(path.join(dir, 'calls'), '');
  });

  afterEach(() => {
    launcher?.close();
    launcher = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  /** A stand-in command: logs its argv to `calls`, then runs `body` (sh). */
  function fake(name: string, body: string): void {
    const file = path.join(bin, name);
    mkdirSync(bin, { recursive: true });
    writeFileSync(file, `#!/bin/sh\necho "${name} $*" >> ${dir}/calls\n${body}\n`);
    chmodSync(file, 0o755);
  }

  /** scontrol answers with the given JobState/Reason lines, one per call, the last one repeated. */
  function scontrolSays(...answers: string[]): void {
    answers.forEach((a, i) => writeFileSync(path.join(dir, `answer.${i}`), a));
    fake(
      'scontrol',
      `n=$(cat ${dir}/n 2>/dev/null || echo 0); f=${dir}/answer.$n; ` +
        `[ -f "$f" ] && echo $((n+1)) > ${dir}/n || f=${dir}/answer.${answers.length - 1}; ` +
        `case "$(cat $f)" in ERR:*) sed 's/^ERR://' $f >&2; exit 1;; esac; cat $f`,
    );
  }

  function start(pilot: PilotRecord): Promise<void> {
    launcher = new SlurmLauncher(
      {
        launched: (uid, trace) => note(`launched ${uid} ${JSON.stringify(trace)}`),
        launchFailed: (uid, e) => note(`launchFailed ${uid} ${e.message}`),
        jobStarted: (uid) => note(`started ${uid}`),
        jobEnded: (uid, end) => note({ ended: uid, end }),
        agentExited: (uid) => note(`agentExited ${uid}`),
      },
      silentLogger,
      { pollMs: 50, env: { ...process.env, PATH: `${bin}${system}` }, lostAfterMs: 300 },
    );
    launcher.launch(pilot, { pilot: pilot.uid } as AgentConfig);
    return until(() => events.some((e) => typeof e === 'object' || e.startsWith('launchFailed')));
  }

  function note(e: Event): void {
    events.push(e);
    onEvent?.();
  }

  /** Resolves once `cond` holds, checked at each event the launcher reports. */
  async function until(cond: () => boolean, timeoutMs = 5_000): Promise<void> {
    const held = new Promise<void>((resolve) => {
      onEvent = () => {
        if (!cond()) return;
        onEvent = undefined;
        resolve();
      };
      onEvent();
    });
    await withTimeout(held, timeoutMs, 'the launcher events').catch((e: unknown) => {
      throw new Error(`${(e as Error).message}; events: ${JSON.stringify(events)}`);
    });
  }

  /** Resolves once a stand-in command named `name` has started (it logs to `calls` first). */
  function called(name: string): Promise<void> {
    const file = path.join(dir, 'calls');
    const seen = (): boolean => calls().some((c) => c.startsWith(`${name} `));
    return withTimeout(
      new Promise<void>((resolve) => {
        const watcher = watch(file, () => {
          if (!seen()) return;
          watcher.close();
          resolve();
        });
        if (seen()) {
          watcher.close();
          resolve();
        }
      }),
      5_000,
      `${name} to be called`,
    );
  }

  const calls = (): string[] =>
    readFileSync(path.join(dir, 'calls'), 'utf8').trim().split('\n').filter(Boolean);
  const pilot = (): PilotRecord =>
    pilotIn('PMGR_LAUNCHING', {
      uid: 'p1',
      sandbox: path.join(dir, 'p1'),
      description: { resource: 'slurm', nodes: 1 },
    });
  const job = (state: string, reason = 'None', exit = '0:0'): string =>
    `JobId=42 JobName=pf-p1 JobState=${state} Reason=${reason} Dependency=(null) ExitCode=${exit} RunTime=00:00:01\n`;

  it('submits job.sh, reports launched, started and the end with the exit and the stderr tail', async () => {
    fake('sbatch', 'echo "42;lab"');
    scontrolSays(
      job('PENDING', 'Resources'),
      job('RUNNING'),
      job('FAILED', 'NonZeroExitCode', '3:0'),
    );
    const p = pilot();
    mkdirSync(p.sandbox, { recursive: true });
    writeFileSync(path.join(p.sandbox, 'job.err'), 'boom\n');
    await start(p);
    expect(events).toEqual([
      'launched p1 {"jobId":"42"}',
      'started p1',
      {
        ended: 'p1',
        end: {
          final: 'FAILED',
          message: 'job 42 ended FAILED (Reason=NonZeroExitCode, ExitCode=3:0)',
          exitCode: 3,
          signal: null,
          stderr: 'boom\n',
        },
      },
    ]);
    expect(calls()).toEqual([
      'sbatch --parsable job.sh',
      'scontrol show job -o 42',
      'scontrol show job -o 42',
      'scontrol show job -o 42',
    ]);
    expect(readFileSync(path.join(p.sandbox, 'job.sh'), 'utf8')).toMatch(
      // run in the sandbox, named relative to it: the command line (ps) names no session
      /^#!\/bin\/bash\n#SBATCH --job-name=pf-p1\n[^]*\ncd \S+\/p1 \|\| exit 1\nexec \S+node\S* \S+\/agent\/main\.js agent\.json\n$/,
    );
    expect(JSON.parse(readFileSync(path.join(p.sandbox, 'agent.json'), 'utf8'))).toEqual({
      pilot: 'p1',
    });
  });

  it('reports sbatch’s stderr verbatim when it refuses the job', async () => {
    fake(
      'sbatch',
      'echo "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified" >&2; exit 1',
    );
    await start(pilot());
    expect(events).toEqual([
      'launchFailed p1 sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified',
    ]);
  });

  it('says so when sbatch is not on PATH', async () => {
    bin = path.join(dir, 'empty');
    system = ''; // not even the real sbatch
    await start(pilot());
    expect(events).toEqual([
      "launchFailed p1 sbatch not found (spawn sbatch ENOENT): Slurm's client commands must be on PATH",
    ]);
  });

  it('fails and scancels a job that can never start', async () => {
    fake('sbatch', 'echo 42');
    fake('scancel', '');
    scontrolSays(job('PENDING', 'PartitionTimeLimit'));
    await start(pilot());
    expect(events).toEqual([
      'launched p1 {"jobId":"42"}',
      {
        ended: 'p1',
        end: {
          final: 'FAILED',
          message: 'job 42 can never start: Slurm keeps it PENDING with Reason=PartitionTimeLimit',
          exitCode: 0,
          signal: null,
          stderr: '',
        },
      },
    ]);
    expect(calls()).toEqual(['sbatch --parsable job.sh', 'scontrol show job -o 42', 'scancel 42']);
  });

  it('ends a job Slurm no longer knows, and gives up on a Slurm that stops answering', async () => {
    fake('sbatch', 'echo 42');
    scontrolSays('ERR:slurm_load_jobs error: Invalid job id specified');
    await start(pilot());
    expect(events[1]).toMatchObject({
      end: {
        final: 'FAILED',
        message: 'job 42 is no longer known to Slurm (it ended, state unknown)',
      },
    });

    launcher?.close();
    events = [];
    writeFileSync(path.join(dir, 'n'), '0');
    scontrolSays('ERR:slurm_load_jobs error: Unable to contact slurm controller (connect failure)');
    await start(pilot());
    expect(events[1]).toMatchObject({ end: { final: 'FAILED' } });
    const end = (events[1] as { end: JobEnd }).end;
    expect(end.message).toMatch(
      /^lost track of job 42: no answer from Slurm for \d+ s: slurm_load_jobs error: Unable to contact slurm controller \(connect failure\)$/,
    );
  });

  it('scancels a job killed while sbatch was still answering, once the id is known', async () => {
    fake('sbatch', 'sleep 0.3; echo 42');
    fake('scancel', '');
    scontrolSays(job('CANCELLED'));
    const p = pilot();
    const done = start(p);
    await called('sbatch'); // it answers 0.3 s later
    launcher!.kill('p1');
    await done;
    expect(events).toEqual([
      'launched p1 {"jobId":"42"}',
      {
        ended: 'p1',
        end: {
          final: 'CANCELED',
          message: 'job 42 was cancelled (scancel)',
          exitCode: 0,
          signal: null,
          stderr: '',
        },
      },
    ]);
    expect(calls().slice(0, 2)).toEqual(['sbatch --parsable job.sh', 'scancel 42']);
  });
});
