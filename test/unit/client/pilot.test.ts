import { describe, expect, it } from '@jest/globals';
import { Pilot } from '../../../src/client/pilot';

describe('Pilot.liveness', () => {
  const pilot = (): Pilot => new Pilot('pilot.0000', { resource: 'local' }, 2, 0, '/s/pilot.0000');
  const silent = {
    state: 'unknown' as const,
    since: 1_000,
    silentParts: [{ part: 'sub-agent n3', since: 500 }],
  };

  it('is there only while the pilot is PMGR_ACTIVE, ok until its manager says otherwise', () => {
    const p = pilot();
    expect(p.liveness).toBeUndefined();
    p.state = 'PMGR_ACTIVE';
    expect(p.liveness).toEqual({ state: 'ok', silentParts: [] });
    p.setLiveness(silent);
    expect(p.liveness).toEqual(silent);
    p.state = 'FAILED';
    expect(p.liveness).toBeUndefined();
  });

  it('is a copy: changing what it gave changes nothing', () => {
    const p = pilot();
    p.state = 'PMGR_ACTIVE';
    p.setLiveness(silent);
    const seen = p.liveness!;
    seen.state = 'ok';
    seen.silentParts[0]!.part = 'x';
    seen.silentParts.push({ part: 'y', since: 1 });
    expect(p.liveness).toEqual(silent);
  });
});
