import { promises as dns } from 'node:dns';
import * as net from 'node:net';
import { FREED_WITHIN_MS } from '../../transport/bind-when-free';
import * as os from 'node:os';
import { errorMeta, UsageError } from '../../errors';
import type { PublishedAddresses } from '../../generated';
import type { Logger } from '../../lib/logger';
import { AddressBoard } from '../../updater/mongodb/addresses';
import { AddressFile } from '../../updater/embedded/address-file';
import * as path from 'node:path';
import type { StoreChoice } from '../../updater/store-choice';
import type { Journal, JournalEntry } from './journal';
import type { PilotLink } from '../pilots/links';
import { placementOf, recordedAddresses, tcpParts, type RecordedAddresses } from './relocation';
import { throughOutage } from '../store/health';

/**
 * Where a resumed session listens. Its agents connect to the addresses they were last given:
 * the session binds them again where it can, and they reconnect on their own. Where it cannot
 * (another machine, a port taken) or is asked to listen elsewhere (bindHost), a MongoDB session
 * binds fresh ports and, once its pilots' sockets are bound, publishes them in its database
 * for its agents (which read it while they hear no client) and then in its journal. An
 * embedded-store session has no way to tell its agents, and refuses to open (placementOf).
 */
export class ResumeAddresses {
  /** Pilots bound again at fresh ports, for the publish. */
  private readonly moved = new Map<string, PilotLink['ports']>();

  private constructor(
    private readonly session: string,
    private readonly recorded: RecordedAddresses,
    /** What the agents read (database, or file), where the session moves (else undefined). */
    private readonly board: AddressBoard | AddressFile | undefined,
    private readonly log: Logger,
  ) {}

  /**
   * A resumed session (`resumed`: its journal's entries; undefined: a new session, which has
   * nothing to decide) reads where its agents connect (journal, and database) and decides
   * whether it binds there: a UsageError says why it cannot resume here, where it cannot.
   */
  static async of(
    s: {
      uid: string;
      journal: Journal;
      resumed: readonly JournalEntry[] | undefined;
      choice: StoreChoice;
    },
    bindHost: string | undefined,
    log: Logger,
  ): Promise<ResumeAddresses | undefined> {
    if (s.resumed === undefined) return undefined;
    const mongo = s.choice.kind === 'mongodb' ? s.choice : undefined;
    // an embedded session's agents read a file of its directory, which only its owner writes
    const board =
      mongo === undefined
        ? new AddressFile(path.join(path.dirname(s.journal.file), ADDRESS_FILE))
        : await AddressBoard.connect(mongo.uri, mongo.db);
    try {
      const published = await board?.read(s.uid);
      const recorded = recordedAddresses(s.resumed, published);
      if (recorded === undefined) {
        throw new UsageError(`cannot resume: ${s.journal.file} names no addresses`);
      }
      const host = tcpParts(recorded.controlDown)?.host;
      const elsewhere =
        bindHost !== undefined &&
        host !== undefined &&
        !(await hostAddresses(bindHost)).includes(host);
      const addresses = [recorded.controlDown, ...[...recorded.pilots.values()].flatMap(portsOf)];
      const placement = placementOf({
        session: s.uid,
        store: s.choice.kind,
        controlDown: recorded.controlDown,
        bindHost,
        elsewhere,
        unbindable: elsewhere ? undefined : await firstUnbindable(addresses),
      });
      if (placement.bind === 'refuse') throw new UsageError(placement.message);
      if (placement.bind === 'recorded') {
        await board?.close();
        return new ResumeAddresses(s.uid, recorded, undefined, log);
      }
      log.warn('the session moves: its agents are told its new addresses', {
        through: mongo === undefined ? ADDRESS_FILE : 'MongoDB',
        why: placement.why,
        epoch: recorded.epoch + 1,
      });
      return new ResumeAddresses(s.uid, recorded, board, log);
    } catch (e) {
      await board?.close();
      throw e;
    }
  }

  /** Where the control socket binds: where the agents connect, or undefined (fresh). */
  get controlDown(): string | undefined {
    return this.board === undefined ? this.recorded.controlDown : undefined;
  }

  /**
   * Binds a pilot's sockets with `open` (PilotLinks.open): a journaled pilot's (`journaled`)
   * at its latest ports, or at fresh ones where the session moves; a new pilot as new.
   */
  async open(
    pilot: string,
    journaled: PilotLink | undefined,
    open: (before: Partial<PilotLink> | undefined) => Promise<PilotLink>,
  ): Promise<PilotLink> {
    if (journaled === undefined) return open(undefined);
    const key = journaled.publicKey !== undefined ? { publicKey: journaled.publicKey } : {};
    if (this.board === undefined) {
      return open({ ...key, ports: this.recorded.pilots.get(pilot) ?? journaled.ports });
    }
    const link = await open(key);
    this.moved.set(pilot, link.ports);
    return link;
  }

  /**
   * Once the resumed pilots' sockets are bound (the replay, before the agents are asked to
   * report in): a session that moved publishes where it listens, epoch one higher, in its
   * database (again and again while no server answers, until `stopped()`), then in its
   * journal, and lets the database go. A no-op for a session that did not move.
   */
  async publish(controlDown: string, journal: Journal, stopped: () => boolean): Promise<void> {
    const board = this.board;
    if (board === undefined) return;
    const addresses: PublishedAddresses = {
      epoch: this.recorded.epoch + 1,
      controlDown,
      // a MongoDB session's agents write to the database, not to a store socket
      pilots: [...this.moved].map(([uid, { store, ...ports }]) => ({
        uid,
        ...ports,
        ...(store !== undefined && this.board instanceof AddressFile ? { store } : {}),
      })),
      at: Date.now(),
    };
    try {
      await throughOutage(() => board.publish(this.session, addresses), stopped);
    } finally {
      await board.close().catch(() => undefined);
    }
    this.log.info('new addresses published for the agents', {
      epoch: addresses.epoch,
      controlDown,
      pilots: addresses.pilots,
    });
    try {
      journal.append({ t: 'addresses', ...addresses });
    } catch (e) {
      // the database holds them, and a resume reads them there (its epoch wins)
      this.log.warn('the journal cannot hold the new addresses', errorMeta(e));
    }
  }

  /** Lets the database go, where a session that moved closes before it published. */
  close(): Promise<void> {
    return this.board?.close() ?? Promise.resolve();
  }
}

/** An embedded session's published addresses, in its directory (AddressFile). */
export const ADDRESS_FILE = 'addresses.json';

/** The addresses a pilot's agent connects to. */
function portsOf(p: PilotLink['ports']): string[] {
  return [p.agentInput, p.managerOutput, p.controlUp, p.store, p.files].filter(
    (a): a is string => a !== undefined,
  );
}

/**
 * The IP addresses a bindHost names, as ZeroMQ binds it: `*` (every interface, which ZeroMQ
 * reports as 0.0.0.0), an IP address, an interface name, or a host name.
 */
async function hostAddresses(bindHost: string): Promise<string[]> {
  if (bindHost === '*') return ['0.0.0.0'];
  if (net.isIP(bindHost) !== 0) return [bindHost];
  const nic = os.networkInterfaces()[bindHost];
  if (nic !== undefined) return nic.map((n) => n.address);
  try {
    return (await dns.lookup(bindHost, { all: true })).map((r) => r.address);
  } catch {
    return []; // the bind itself will say what is wrong with it
  }
}

/**
 * The first TCP address that cannot be bound here (its host is not this machine's, or its
 * port is taken), found by listening on it for a moment, with the socket options ZeroMQ binds
 * with (SO_REUSEADDR, as Node's own listen): what the session then binds is the same.
 */
async function firstUnbindable(
  addresses: readonly string[],
): Promise<{ address: string; code: string; message: string } | undefined> {
  for (const address of new Set(addresses)) {
    const at = tcpParts(address);
    if (at === undefined) continue;
    const failure = await listensWhenFree(at);
    if (failure !== undefined) {
      return { address, code: failure.code ?? 'unknown', message: failure.message };
    }
  }
  return undefined;
}

/**
 * Listens on `at` for a moment. A port taken (EADDRINUSE) is tried again for as long as a
 * bind waits for it (bindWhenFree): the last client's sockets free their ports only when
 * libzmq's reaper gets to them, a few milliseconds after its close resolved.
 */
async function listensWhenFree(at: {
  host: string;
  port: number;
}): Promise<NodeJS.ErrnoException | undefined> {
  const deadline = Date.now() + FREED_WITHIN_MS;
  for (let waitMs = 1; ; waitMs = Math.min(waitMs * 2, 50)) {
    const failure = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
      const server = net.createServer();
      server.once('error', resolve);
      server.listen({ ...at, exclusive: true }, () => server.close(() => resolve(undefined)));
    });
    if (failure?.code !== 'EADDRINUSE' || Date.now() > deadline) return failure;
    await new Promise((resolve) => setTimeout(resolve, waitMs));
  }
}
