import { describe, expect, it } from '@jest/globals';
import { withConfigHint } from '../../../../src/components/pilot-launcher/slurm-launcher';

// What Debian's sbatch 22.05 printed here without SLURM_CONF and without /etc/slurm/slurm.conf
// (recorded; test/integration/slurm/sbatch-hint.test.ts runs the real one).
const NO_CONFIG = `sbatch: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host
sbatch: error: fetch_config: DNS SRV lookup failed
sbatch: error: _establish_config_source: failed to fetch config
sbatch: fatal: Could not establish a configuration source`;

describe("a pilot's reason when sbatch fails", () => {
  it('says, where sbatch found no cluster, to set SLURM_CONF or start the lab', () => {
    const said = withConfigHint(NO_CONFIG);
    expect(said.startsWith(NO_CONFIG)).toBe(true); // sbatch's own words first, verbatim
    expect(said).toContain('set SLURM_CONF');
    expect(said).toContain('pilotfish lab start');
  });

  it("leaves sbatch's other words as they are", () => {
    const other = 'sbatch: error: invalid partition specified: gpu';
    expect(withConfigHint(other)).toBe(other);
  });
});
