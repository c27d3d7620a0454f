import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCli } from '../../support/cli';
import { describeSlurm, slurmEnv, slurmLab } from '../../support/slurm';

// `pilotfish lab`: the Slurm lab on this machine, for users (docs/guide.md, "A Slurm pilot").

describe('pilotfish lab (no cluster needed)', () => {
  it('refuses a bad node count, and says when no lab is up', async () => {
    const bad = await runCli(['lab', 'start', '--nodes', '0']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--nodes must be 1-64');
    const none = await runCli(['lab', 'env', '--lab', '/nonexistent/lab']);
    expect([none.code, none.stdout]).toEqual([1, '']);
    expect(none.stderr).toContain(
      "no lab is up in /nonexistent/lab: start one with 'sudo pilotfish lab start'",
    );
  });
});

describeSlurm('pilotfish lab (as root, with Debian Slurm)', () => {
  let lab: string;
  beforeAll(() => {
    lab = mkdtempSync(path.join(os.tmpdir(), 'pf-lab-'));
  });
  afterAll(async () => {
    await runCli(['lab', 'stop', '--lab', lab, '--purge']);
    rmSync(lab, { recursive: true, force: true });
  }, 60_000);

  it("names the tests' lab: the SLURM_CONF to export", async () => {
    const r = await runCli(['lab', 'env', '--lab', slurmLab()]);
    expect([r.code, r.stdout]).toEqual([0, `export SLURM_CONF=${slurmEnv()!.SLURM_CONF}\n`]);
  });

  it('starts a lab of 8 nodes beside it, whose jobs run on all 8, then stops it', async () => {
    // ports of its own: the tests' lab (17817...) keeps running
    const up = await runCli(['lab', 'start', '--lab', lab, '--nodes', '8', '--port', '19817']);
    expect(up.code).toBe(0);
    const conf = /^export SLURM_CONF=(\S+)$/m.exec(up.stdout)?.[1];
    expect(conf).toBe(path.join(lab, 'etc', 'slurm.conf'));
    const env = { ...process.env, SLURM_CONF: conf };
    const hosts = execFileSync('srun', ['-N', '8', '--ntasks-per-node', '1', 'hostname'], {
      env,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(hosts.trim().split('\n').sort()).toEqual(
      Array.from({ length: 8 }, (_, i) => `n${i + 1}`).sort(),
    );
    const down = await runCli(['lab', 'stop', '--lab', lab]);
    expect(down.code).toBe(0);
    expect(existsSync(path.join(lab, 'env.sh'))).toBe(false);
    const gone = await runCli(['lab', 'env', '--lab', lab]);
    expect(gone.code).toBe(1);
    // the tests' lab still answers
    const still = await runCli(['lab', 'env', '--lab', slurmLab()]);
    expect(still.code).toBe(0);
  }, 120_000);
});
