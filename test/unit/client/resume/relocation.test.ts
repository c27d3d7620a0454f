import { describe, expect, it } from '@jest/globals';
import type { PilotDescription, PublishedAddresses } from '../../../../src/generated';
import type { JournalEntry } from '../../../../src/client/resume/journal';
import type { PilotPorts } from '../../../../src/client/pilots/links';
import {
  isLoopback,
  placementOf,
  recordedAddresses,
  tcpParts,
  type PlacementFacts,
} from '../../../../src/client/resume/relocation';
import { ValidationError } from '../../../../src/errors';
import { parsePublishedAddresses } from '../../../../src/lib/validate';

const ports = (host: string, base: number): PilotPorts => ({
  agentInput: `tcp://${host}:${base}`,
  managerOutput: `tcp://${host}:${base + 1}`,
  controlUp: `tcp://${host}:${base + 2}`,
  files: `tcp://${host}:${base + 3}`,
});

const description: PilotDescription = { resource: 'local', cores: 1, runtimeMin: 1 };

function pilots(...list: [uid: string, ports: PilotPorts][]): JournalEntry {
  return {
    t: 'pilots',
    mgr: 'pmgr.0000',
    pilots: list.map(([uid, p]) => ({
      uid,
      description,
      cores: 1,
      gpus: 0,
      sandbox: `/s/${uid}`,
      link: { ports: p, publicKey: 'k' },
    })),
  };
}

function moved(epoch: number, host: string, list: string[]): PublishedAddresses {
  return {
    epoch,
    controlDown: `tcp://${host}:9000`,
    pilots: list.map((uid, i) => ({ uid, ...ports(host, 9100 + i * 10) })),
    at: 1,
  };
}

const SESSION: JournalEntry = {
  t: 'session',
  uid: 's',
  addresses: { controlDown: 'tcp://127.0.0.1:4000' },
};

describe('recordedAddresses: where the agents of a resumed session connect', () => {
  it("are the journal's own where the session never moved (epoch 0)", () => {
    const r = recordedAddresses(
      [SESSION, pilots(['pilot.0000', ports('127.0.0.1', 4100)])],
      undefined,
    );
    expect(r).toEqual({
      epoch: 0,
      controlDown: 'tcp://127.0.0.1:4000',
      pilots: new Map([['pilot.0000', ports('127.0.0.1', 4100)]]),
    });
  });

  it('are the latest move for the pilots it lists; a pilot submitted after it keeps its own', () => {
    const entries: JournalEntry[] = [
      SESSION,
      pilots(['pilot.0000', ports('127.0.0.1', 4100)], ['pilot.0001', ports('127.0.0.1', 4200)]),
      { t: 'addresses', ...moved(1, '127.0.0.2', ['pilot.0000', 'pilot.0001']) },
      pilots(['pilot.0002', ports('127.0.0.2', 4300)]),
      { t: 'addresses', ...moved(2, '127.0.0.3', ['pilot.0000']) },
    ];
    const r = recordedAddresses(entries, undefined)!;
    expect(r.epoch).toBe(2);
    expect(r.controlDown).toBe('tcp://127.0.0.3:9000');
    expect(r.pilots.get('pilot.0000')).toEqual(ports('127.0.0.3', 9100));
    expect(r.pilots.get('pilot.0001')).toEqual(ports('127.0.0.2', 9110)); // not bound at 2
    expect(r.pilots.get('pilot.0002')).toEqual(ports('127.0.0.2', 4300));
  });

  it('are the published ones where their epoch is at least the journal’s: they are what the agents read', () => {
    const entries: JournalEntry[] = [
      SESSION,
      pilots(['pilot.0000', ports('127.0.0.1', 4100)]),
      { t: 'addresses', ...moved(1, '127.0.0.2', ['pilot.0000']) },
    ];
    // a client elsewhere moved the session again, and this journal never heard of it
    expect(recordedAddresses(entries, moved(2, '10.0.0.7', ['pilot.0000']))).toEqual({
      epoch: 2,
      controlDown: 'tcp://10.0.0.7:9000',
      pilots: new Map([['pilot.0000', ports('10.0.0.7', 9100)]]),
    });
    // the same epoch: the database's copy
    expect(recordedAddresses(entries, moved(1, '127.0.0.9', ['pilot.0000']))?.controlDown).toBe(
      'tcp://127.0.0.9:9000',
    );
    // an older one (its document was removed and written again by hand, say): the journal's
    expect(recordedAddresses(entries, { ...moved(0, '127.0.0.9', []), epoch: 0 })?.epoch).toBe(1);
  });

  it('are none where the journal has no session entry', () => {
    expect(recordedAddresses([pilots(['p', ports('h', 1)])], undefined)).toBeUndefined();
  });
});

describe('placementOf: where a resumed session listens', () => {
  const facts = (f: Partial<PlacementFacts>): PlacementFacts => ({
    session: 'pf.s',
    store: 'mongodb',
    controlDown: 'tcp://127.0.0.1:4000',
    bindHost: undefined,
    elsewhere: false,
    unbindable: undefined,
    ...f,
  });
  const taken = { address: 'tcp://127.0.0.1:4000', code: 'EADDRINUSE', message: 'in use' };
  const gone = { address: 'tcp://10.0.0.5:4000', code: 'EADDRNOTAVAIL', message: 'not here' };

  it('binds where its agents connect when it can and is not asked elsewhere, whatever its store', () => {
    expect(placementOf(facts({}))).toEqual({ bind: 'recorded' });
    expect(placementOf(facts({ store: 'embedded', bindHost: '127.0.0.1' }))).toEqual({
      bind: 'recorded',
    });
  });

  it('binds fresh ports when a MongoDB session is asked elsewhere, or cannot bind its own', () => {
    expect(placementOf(facts({ bindHost: '127.0.0.2', elsewhere: true }))).toEqual({
      bind: 'fresh',
      why: 'it was asked to listen on 127.0.0.2, not on 127.0.0.1',
    });
    expect(placementOf(facts({ unbindable: taken }))).toEqual({
      bind: 'fresh',
      why: 'tcp://127.0.0.1:4000 cannot be bound on this machine (EADDRINUSE: in use)',
    });
    expect(
      placementOf(facts({ controlDown: gone.address, unbindable: gone, bindHost: '10.0.0.9' })),
    ).toEqual({
      bind: 'fresh',
      why: 'tcp://10.0.0.5:4000 cannot be bound on this machine (EADDRNOTAVAIL: not here)',
    });
  });

  it('binds fresh ports for an embedded session whose own are taken here (its agents read them from its directory)', () => {
    expect(placementOf(facts({ store: 'embedded', unbindable: taken }))).toEqual({
      bind: 'fresh',
      why: 'tcp://127.0.0.1:4000 cannot be bound on this machine (EADDRINUSE: in use)',
    });
  });

  it('refuses an embedded session asked to listen on another machine, saying why', () => {
    const q = placementOf(facts({ store: 'embedded', bindHost: '127.0.0.2', elsewhere: true }));
    expect(q).toEqual({
      bind: 'refuse',
      message:
        "cannot resume session pf.s here: its agents connect to tcp://127.0.0.1:4000, and it was asked to listen on 127.0.0.2, not on 127.0.0.1; a session whose store is embedded tells its agents new addresses only on the machine it ran on: resume it there (with the same bindHost or none), or keep a session's store in MongoDB to resume it elsewhere",
    });
  });

  it('refuses to move agents on other nodes to 127.0.0.1: the user names an address they reach', () => {
    const p = placementOf(facts({ controlDown: gone.address, unbindable: gone }));
    expect(p).toEqual({
      bind: 'refuse',
      message:
        "cannot resume session pf.s here: its agents connect to tcp://10.0.0.5:4000, and tcp://10.0.0.5:4000 cannot be bound on this machine (EADDRNOTAVAIL: not here); give bindHost, an address of this machine that its agents' nodes reach, to move them there",
    });
  });
});

describe('addresses, as written and read', () => {
  it('splits tcp addresses, IPv6 included, and knows loopback hosts', () => {
    expect(tcpParts('tcp://127.0.0.2:4000')).toEqual({ host: '127.0.0.2', port: 4000 });
    expect(tcpParts('tcp://[::1]:4000')).toEqual({ host: '::1', port: 4000 });
    expect(tcpParts('tcp://login2.example.org:1')).toEqual({ host: 'login2.example.org', port: 1 });
    expect(tcpParts('inproc://x')).toBeUndefined();
    expect(['127.0.0.1', '127.3.2.1', '::1', 'localhost'].filter(isLoopback)).toHaveLength(4);
    expect(['10.0.0.1', '0.0.0.0', 'login2'].filter(isLoopback)).toEqual([]);
  });

  it('checks a published document as it is read back, naming the path', () => {
    const good = moved(1, '127.0.0.2', ['pilot.0000']);
    expect(parsePublishedAddresses(good)).toEqual(good);
    const bad = { ...good, epoch: 0, pilots: [{ uid: 'pilot.0000', agentInput: 1 }] };
    let error: unknown;
    try {
      parsePublishedAddresses(bad);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).issues.map((i) => i.path).sort()).toEqual([
      '/epoch',
      '/pilots/0',
      '/pilots/0',
      '/pilots/0/agentInput',
    ]);
  });
});
