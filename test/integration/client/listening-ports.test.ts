import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { fixtures } from '../../support/session-fixture';

/** The TCP ports this process listens on (from /proc: its socket inodes in the LISTEN state). */
function listeningPorts(): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`));
      if (m !== null) inodes.add(m[1]!);
    } catch {
      // closed while listing
    }
  }
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // local_address is f[1] (hex ip:port), st is f[3] (0A = LISTEN), inode is f[9]
      if (f.length > 9 && f[3] === '0A' && inodes.has(f[9]!)) {
        ports.push(parseInt(f[1]!.split(':')[1]!, 16));
      }
    }
  }
  return ports.sort((a, b) => a - b);
}

const portOf = (endpoint: string): number => Number(/:(\d+)$/.exec(endpoint)![1]);

describe('what a session listens on', () => {
  const fixture = fixtures();

  it("is only what its agents connect to: the shared control socket and each pilot's own five", async () => {
    const before = listeningPorts();
    const fx = await fixture.open({ cores: 1 });
    const [pilot2] = await fx.pmgr.submitPilots([{ resource: 'local', cores: 1 }]);
    await fx.pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 20_000 });
    const agentFacing = [fx.pilot.uid, pilot2!.uid].flatMap((uid) => {
      const cfg = JSON.parse(readFileSync(`${fx.session.dir}/${uid}/agent.json`, 'utf8')) as {
        addresses: Record<string, string>;
      };
      return Object.values(cfg.addresses);
    });
    const expected = [...new Set(agentFacing.map(portOf))].sort((a, b) => a - b);
    // control down (shared); each pilot's tasks, hand-back, control up, store and files
    expect(expected).toHaveLength(1 + 2 * 5);
    const now = listeningPorts().filter((p) => !before.includes(p));
    expect(now).toEqual(expected);
  }, 30_000);
});
