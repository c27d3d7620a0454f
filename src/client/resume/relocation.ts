import type { PublishedAddresses } from '../../generated';
import type { JournalEntry } from './journal';
import type { PilotPorts } from '../pilots/links';

/**
 * Where a resumed session's agents connect, as far as its journal and (a MongoDB session) its
 * database say: pure, so that which addresses win is tested without files or a server.
 */
export interface RecordedAddresses {
  /** 0: the bootstrap files' addresses; each move of the session's client adds one. */
  epoch: number;
  controlDown: string;
  /** Each journaled pilot's ports, the latest known. */
  pilots: Map<string, PilotPorts>;
}

/**
 * The latest addresses: the `session` entry's control socket and each `pilots` entry's ports
 * (epoch 0), then every `addresses` entry of a higher epoch, then the published ones where
 * their epoch is at least the journal's (the database is what the agents read: a client may
 * have died between publishing and writing its journal, or moved on another machine).
 * Undefined where the journal has no `session` entry.
 */
export function recordedAddresses(
  entries: readonly JournalEntry[],
  published: PublishedAddresses | undefined,
): RecordedAddresses | undefined {
  let recorded: RecordedAddresses | undefined;
  const moves: PublishedAddresses[] = [];
  for (const e of entries) {
    if (e.t === 'session') {
      recorded = { epoch: 0, controlDown: e.addresses.controlDown, pilots: new Map() };
    } else if (e.t === 'pilots' && recorded !== undefined) {
      for (const p of e.pilots) recorded.pilots.set(p.uid, p.link.ports);
    } else if (e.t === 'addresses') moves.push(e);
  }
  if (recorded === undefined) return undefined;
  if (published !== undefined) moves.push(published);
  for (const m of moves) {
    if (m.epoch < recorded.epoch || (m !== published && m.epoch === recorded.epoch)) continue;
    recorded.epoch = m.epoch;
    recorded.controlDown = m.controlDown;
    for (const { uid, ...ports } of m.pilots) recorded.pilots.set(uid, ports);
  }
  return recorded;
}

/** The host and port of a `tcp://host:port` address (an IPv6 host without its brackets). */
export function tcpParts(address: string): { host: string; port: number } | undefined {
  const m = /^tcp:\/\/(?:\[([^\]]+)\]|([^:/]+)):(\d+)$/.exec(address);
  return m === null ? undefined : { host: (m[1] ?? m[2])!, port: Number(m[3]) };
}

/** Whether `host` is this machine's loopback, reachable only from agents on the same machine. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** What a resumed session found out about where it can listen. */
export interface PlacementFacts {
  session: string;
  store: 'embedded' | 'mongodb';
  /** The control socket its agents connect to now. */
  controlDown: string;
  /** Session.open's bindHost, where one was given. */
  bindHost: string | undefined;
  /** bindHost was given and names another host than the recorded addresses'. */
  elsewhere: boolean;
  /** A recorded address that cannot be bound here, and why (EADDRINUSE, EADDRNOTAVAIL, ...). */
  unbindable: { address: string; code: string; message: string } | undefined;
}

/**
 * Where a resumed session listens: where its agents connect (`recorded`), or at fresh ports
 * on its bindHost (`fresh`), which a MongoDB session tells its agents through its database, an
 * embedded one (on its own machine) through a file of its directory; they read it while they
 * hear no client. `refuse` says why neither will do.
 */
export type Placement =
  { bind: 'recorded' } | { bind: 'fresh'; why: string } | { bind: 'refuse'; message: string };

export function placementOf(f: PlacementFacts): Placement {
  const host = tcpParts(f.controlDown)?.host ?? f.controlDown;
  let why: string;
  if (f.elsewhere) why = `it was asked to listen on ${f.bindHost}, not on ${host}`;
  else if (f.unbindable !== undefined) {
    const u = f.unbindable;
    why = `${u.address} cannot be bound on this machine (${u.code}: ${u.message})`;
  } else return { bind: 'recorded' };
  const cannot = `cannot resume session ${f.session} here: its agents connect to ${f.controlDown}, and ${why}`;
  // an embedded session tells its agents through a file of its directory: on this machine
  if (f.store === 'embedded' && f.elsewhere) {
    return {
      bind: 'refuse',
      message: `${cannot}; a session whose store is embedded tells its agents new addresses only on the machine it ran on: resume it there (with the same bindHost or none), or keep a session's store in MongoDB to resume it elsewhere`,
    };
  }
  // fresh ports on 127.0.0.1 would strand agents on other nodes: the user says where
  if (f.bindHost === undefined && !isLoopback(host)) {
    return {
      bind: 'refuse',
      message: `${cannot}; give bindHost, an address of this machine that its agents' nodes reach, to move them there`,
    };
  }
  return { bind: 'fresh', why };
}
