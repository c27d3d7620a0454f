import { describe, expect, it } from '@jest/globals';
import type { PublishedAddresses } from '../../../src/generated';
import {
  destination,
  LOOK_EVERY_MS,
  RelocationCore,
  SILENCE_BEFORE_LOOKING_MS,
  silenceBeforeLookingMs,
} from '../../../src/agent/relocation/core';
import type { AgentAddresses, RelocationEffects } from '../../../src/agent/relocation/effects';
import { CoreHarness } from '../../support/core-harness';

const START: AgentAddresses = {
  controlDown: 'tcp://127.0.0.1:4000',
  controlUp: 'tcp://127.0.0.1:4001',
  agentInput: 'tcp://127.0.0.1:4002',
  managerOutput: 'tcp://127.0.0.1:4003',
  files: 'tcp://127.0.0.1:4004',
};

/** Addresses of `epoch` on host 127.0.0.2, listing pilot.0001 (and `others`). */
function published(epoch: number, others: string[] = []): PublishedAddresses {
  const at = (port: number): string => `tcp://127.0.0.2:${5000 + epoch * 10 + port}`;
  return {
    epoch,
    controlDown: at(0),
    pilots: ['pilot.0001', ...others].map((uid, i) => ({
      uid,
      controlUp: at(1 + i * 4),
      agentInput: at(2 + i * 4),
      managerOutput: at(3 + i * 4),
      files: at(4 + i * 4),
    })),
    at: 1_700_000_000_000,
  };
}

function short(a: AgentAddresses): string {
  const port = (s: string | undefined): string => s?.split(':').pop() ?? '-';
  return [a.controlDown, a.controlUp, a.agentInput, a.managerOutput, a.files].map(port).join(',');
}

function setup(pilot = 'pilot.0001') {
  const h = new CoreHarness();
  const effects: RelocationEffects = {
    read: () => h.rec.record(`read at ${h.clock.now() - t0}`),
    move: (from, to, epoch) => h.rec.record(`move ${epoch} ${short(from)} -> ${short(to)}`),
  };
  const t0 = h.clock.now();
  const core = new RelocationCore(
    effects,
    h.clock,
    { pilot, silenceMs: SILENCE_BEFORE_LOOKING_MS, everyMs: LOOK_EVERY_MS },
    START,
  );
  return Object.assign(h, { core });
}

describe('RelocationCore: when an agent looks where its client listens', () => {
  it('never looks while the client beats', () => {
    const { clock, core, rec } = setup();
    core.onStart();
    for (let i = 0; i < 60; i++) {
      clock.advance(1_000);
      core.onHeartbeat();
    }
    rec.expectNoMore();
  });

  it('looks once the client has been silent 5 s, then every 2 s, one read at a time', () => {
    const { clock, core, rec } = setup();
    core.onStart();
    clock.advance(4_000);
    rec.expectNoMore(); // silent 4 s: a busy client
    clock.advance(2_000);
    expect(rec.take()).toEqual(['read at 6000']);
    clock.advance(4_000); // the read is still under way: no second one
    rec.expectNoMore();
    core.onRead(undefined); // none published
    clock.advance(2_000);
    expect(rec.take()).toEqual(['read at 12000']);
    core.onReadFailed(); // no server: the next look tries again
    clock.advance(2_000);
    expect(rec.take()).toEqual(['read at 14000']);
    core.onRead(undefined);
    core.onHeartbeat(); // the client is back where it was
    clock.advance(2_000);
    rec.expectNoMore();
  });

  it('counts the silence from the start, before any heartbeat', () => {
    const { clock, core, rec } = setup();
    clock.advance(60_000); // built, not started
    core.onStart();
    clock.advance(4_000);
    rec.expectNoMore();
    clock.advance(2_000);
    expect(rec.take()).toEqual(['read at 66000']);
  });

  it('looks sooner where the client is given up on sooner (half the heartbeat timeout)', () => {
    expect(silenceBeforeLookingMs(30_000)).toBe(SILENCE_BEFORE_LOOKING_MS);
    expect(silenceBeforeLookingMs(6_000)).toBe(3_000);
    expect(silenceBeforeLookingMs(0)).toBe(SILENCE_BEFORE_LOOKING_MS); // never given up on
  });
});

describe('RelocationCore: whether it moves', () => {
  /** A core that has just asked to read. */
  function reading() {
    const h = setup();
    h.core.onStart();
    h.clock.advance(6_000);
    expect(h.rec.take()).toEqual(['read at 6000']);
    return h;
  }

  it("moves every connection to a higher epoch's addresses, once", () => {
    const { clock, core, rec } = reading();
    core.onRead(published(1, ['pilot.0002']));
    expect(rec.take()).toEqual(['move 1 4000,4001,4002,4003,4004 -> 5010,5011,5012,5013,5014']);
    expect(core.inUse.epoch).toBe(1);
    // the new client's beats take a moment: no look before it has been silent again
    clock.advance(4_000);
    rec.expectNoMore();
    clock.advance(2_000);
    expect(rec.take()).toEqual(['read at 12000']);
    core.onRead(published(1)); // the same epoch again: nothing to do
    clock.advance(2_000);
    expect(rec.take()).toEqual(['read at 14000']);
    core.onRead(published(2));
    expect(rec.take()).toEqual(['move 2 5010,5011,5012,5013,5014 -> 5020,5021,5022,5023,5024']);
    rec.expectNoMore();
  });

  it('never moves back to a lower or equal epoch', () => {
    const { clock, core, rec } = reading();
    core.onRead(published(3));
    rec.take();
    for (const epoch of [1, 2, 3]) {
      clock.advance(6_000);
      rec.take();
      core.onRead(published(epoch));
      rec.expectNoMore();
    }
    expect(core.inUse.epoch).toBe(3);
  });

  it("keeps a pilot's own ports where the addresses do not list it (only the control socket moves)", () => {
    const { core, rec } = reading();
    core.onRead({ ...published(1), pilots: [] });
    expect(rec.take()).toEqual(['move 1 4000,4001,4002,4003,4004 -> 5010,4001,4002,4003,4004']);
  });

  it('takes up the epoch without moving when its addresses are those in use (a pilot launched after they were published)', () => {
    const { clock, core, rec } = reading();
    const same: PublishedAddresses = {
      epoch: 4,
      controlDown: START.controlDown,
      pilots: [],
      at: 1,
    };
    core.onRead(same);
    rec.expectNoMore();
    expect(core.inUse).toEqual({ epoch: 4, addresses: START });
    clock.advance(2_000);
    expect(rec.take()).toEqual(['read at 8000']); // still silent: still looking
  });

  it('looks no more once stopped, and ignores a read that comes back after', () => {
    const { clock, core, rec } = reading();
    core.onStop();
    core.onRead(published(1));
    clock.advance(60_000);
    rec.expectNoMore();
    expect(core.inUse.epoch).toBe(0);
  });
});

describe('destination', () => {
  it("takes the control socket and the pilot's own entry, and its file channel only where one is given", () => {
    const { files: _files, ...noFiles } = START;
    const p = published(1);
    const { files: _f, ...entry } = p.pilots[0]!;
    expect(destination(noFiles, { ...p, pilots: [entry] }, 'pilot.0001')).toEqual({
      controlDown: 'tcp://127.0.0.2:5010',
      controlUp: 'tcp://127.0.0.2:5011',
      agentInput: 'tcp://127.0.0.2:5012',
      managerOutput: 'tcp://127.0.0.2:5013',
    });
    expect(destination(START, { ...p, pilots: [entry] }, 'pilot.0001').files).toBe(START.files);
    expect(destination(START, p, 'pilot.0009')).toEqual({
      ...START,
      controlDown: 'tcp://127.0.0.2:5010',
    });
  });
});
