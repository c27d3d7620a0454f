import { describe, expect, it } from '@jest/globals';
import {
  journaledRouterStatus,
  modelProfiles,
  type RouterEntry,
} from '../../../src/profile/models';
import { modelsPanel } from '../../../src/profile/timeline/models-panel';

// A router's journal lines (RouterEvent at ts) read back as each replica's life, the status of
// an ended session, and the timeline's panel.

const at = (ts: number, event: RouterEntry['event']): RouterEntry => ({ ts, event });

const JOURNAL: RouterEntry[] = [
  at(1_000, { type: 'replica_starting', model: 'a', replica: 'r.a.0', pilot: 'p0' }),
  at(3_000, { type: 'replica_ready', model: 'a', replica: 'r.a.0', pilot: 'p0', loadMs: 2_000 }),
  at(5_000, { type: 'swap', model: 'b', stopped: ['a'] }),
  at(5_000, { type: 'replica_stopping', model: 'a', replica: 'r.a.0', why: 'swap' }),
  at(5_000, { type: 'replica_starting', model: 'b', replica: 'r.b.1', pilot: 'p0' }),
  at(5_500, {
    type: 'replica_ended',
    model: 'a',
    replica: 'r.a.0',
    reason: 'DONE',
    expected: true,
  }),
  at(9_000, { type: 'replica_ready', model: 'b', replica: 'r.b.1', pilot: 'p0', loadMs: 4_000 }),
  at(9_500, {
    type: 'replica_ended',
    model: 'b',
    replica: 'r.b.1',
    reason: 'FAILED E_SERVICE_UNHEALTHY',
    expected: false,
  }),
];

describe('models from a router journal', () => {
  it("rebuilds each replica's life and the swaps", () => {
    const [a, b] = modelProfiles(JOURNAL);
    expect(a).toEqual({
      name: 'a',
      swaps: [],
      replicas: [
        {
          id: 'r.a.0',
          pilot: 'p0',
          started: 1_000,
          ready: 3_000,
          loadMs: 2_000,
          stopping: 5_000,
          why: 'swap',
          ended: 5_500,
          reason: 'DONE',
          expected: true,
        },
      ],
    });
    expect(b!.swaps).toEqual([{ ts: 5_000, stopped: ['a'] }]);
    expect(b!.replicas[0]).toMatchObject({ loadMs: 4_000, expected: false });
  });

  it('says what an ended session did per model: loads and their times, swaps, replicas lost', () => {
    expect(journaledRouterStatus(modelProfiles(JOURNAL))).toEqual({
      models: [
        {
          name: 'a',
          queued: 0,
          inFlight: 0,
          lastLoadMs: 2_000,
          loads: 1,
          meanLoadMs: 2_000,
          maxLoadMs: 2_000,
          swaps: 0,
          lost: 0,
          replicas: [],
        },
        {
          name: 'b',
          queued: 0,
          inFlight: 0,
          lastLoadMs: 4_000,
          loads: 1,
          meanLoadMs: 4_000,
          maxLoadMs: 4_000,
          swaps: 1,
          lost: 1,
          replicas: [],
        },
      ],
    });
  });

  it('draws a row per replica, a lost mark and a swap line; nothing without models', () => {
    const svg = modelsPanel(modelProfiles(JOURNAL), 0, 10_000, 10_000);
    expect(svg.match(/<text /g)).toHaveLength(2);
    expect(svg).toContain('<title>a r.a.0: loading 2.00 s</title>');
    expect(svg).toContain('<title>a r.a.0: serving 2.00 s</title>');
    expect(svg).toContain('<title>a r.a.0: stopping (swap) 0.50 s</title>');
    expect(svg).toContain('<title>r.b.1 lost: FAILED E_SERVICE_UNHEALTHY</title>');
    expect(svg).toContain('<title>swap: b in, a out</title>');
    expect(modelsPanel([], 0, 1, 1)).toBe('');
    expect(modelsPanel(undefined, 0, 1, 1)).toBe('');
  });
});
