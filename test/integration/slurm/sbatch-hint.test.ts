import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { withConfigHint } from '../../../src/components/pilot-launcher/slurm-launcher';

// The real sbatch with no cluster to find (no SLURM_CONF, no /etc/slurm/slurm.conf): its words
// are the ones a pilot's reason adds the hint to (SLURM_CONF, `pilotfish lab start`).

const sbatch = spawnSync('sh', ['-c', 'command -v sbatch'], { encoding: 'utf8' }).stdout.trim();
const why =
  sbatch === ''
    ? 'no sbatch (scripts/slurm-up.sh installs it)'
    : existsSync('/etc/slurm/slurm.conf')
      ? 'this machine has a Slurm of its own (/etc/slurm/slurm.conf)'
      : undefined;
const describeIf = why === undefined ? describe : describe.skip;

describeIf(`sbatch without a cluster${why === undefined ? '' : ` (skipped: ${why})`}`, () => {
  it('says so in words the pilot launcher recognizes', () => {
    const { SLURM_CONF: _conf, ...env } = process.env;
    const r = spawnSync(sbatch, ['--parsable', '--wrap', 'true'], {
      env,
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(r.stdout.trim()).toBe('');
    expect(withConfigHint(r.stderr.trim())).toContain('pilotfish lab start');
  });
});
