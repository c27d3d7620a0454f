import { errorMeta } from '../../errors';
import type { Clock } from '../../lib/clock';
import type { Logger } from '../../lib/logger';
import type { QueueSet } from '../../components/shared/queue-set';
import type { ControlBus } from '../../transport/control-bus';
import type { PublishedAddresses } from '../../generated';
import type { FileChannel } from '../file-channel';
import { LOOK_EVERY_MS, RelocationCore, silenceBeforeLookingMs } from './core';
import type { AgentAddresses, RelocationEffects } from './effects';

/** The agent's connections to its client, as far as they are built. */
export interface AgentConnections {
  control: ControlBus | undefined;
  queues: QueueSet;
  files: FileChannel | undefined;
  /** The UpdateWorkers, where they send to an embedded store's socket. */
  workers?: readonly { moveStore(address: string): void }[];
}

/** Where a silent client's new addresses are read: its database, or its directory's file. */
export interface AddressSource {
  read(session: string): Promise<PublishedAddresses | undefined>;
  close(): Promise<void>;
}

/**
 * Moves each of an agent's connections that changed from `from` to `to`: the control bus
 * (subscriber and uplink), the task queue it pulls, the hand-back queue it pushes, the file
 * channel. The keys stay: the session's key pair is the resumed client's too.
 */
export function moveConnections(
  c: AgentConnections,
  from: AgentAddresses,
  to: AgentAddresses,
): void {
  c.control?.move({ in: to.controlUp, out: to.controlDown });
  c.queues.move(from.agentInput, to.agentInput);
  c.queues.move(from.managerOutput, to.managerOutput);
  if (to.files !== undefined) c.files?.move(to.files);
  if (to.store !== undefined && to.store !== from.store) {
    for (const w of c.workers ?? []) w.moveStore(to.store);
  }
}

export interface RelocationDeps {
  session: string;
  pilot: string;
  /** Opens where the addresses are read (the session's database, or its addresses file). */
  source: () => Promise<AddressSource>;
  /** Where the agent connects at start (its config's addresses). */
  addresses: AgentAddresses;
  heartbeatTimeoutMs: number;
  clock: Clock;
  log: Logger;
  connections: () => AgentConnections;
  /** The connections moved: the new client gets a full heartbeatTimeoutMs to be heard. */
  moved: () => void;
}

/**
 * Runs RelocationCore for an agent: reads the session's published addresses (a MongoDB
 * session's through a connection of its own to the database, made the first time the client is
 * silent: the session's MongoStore keeps its driver client to itself; an embedded session's from
 * the file of its directory), and moves the
 * agent's connections where the core says.
 */
export class RelocationShell implements RelocationEffects {
  readonly core: RelocationCore;
  private board: AddressSource | undefined;
  private inflight: Promise<void> | undefined;
  /** Failed reads in a row: the first is logged, and the first success after them. */
  private failures = 0;

  constructor(private readonly deps: RelocationDeps) {
    this.core = new RelocationCore(
      this,
      deps.clock,
      {
        pilot: deps.pilot,
        silenceMs: silenceBeforeLookingMs(deps.heartbeatTimeoutMs),
        everyMs: LOOK_EVERY_MS,
      },
      deps.addresses,
    );
  }

  read(): void {
    this.inflight = this.readNow();
  }

  move(from: AgentAddresses, to: AgentAddresses, epoch: number): void {
    // addresses only: the database's URI may hold a password
    this.deps.log.info('the client listens elsewhere now: moving every connection there', {
      epoch,
      from,
      to,
    });
    try {
      moveConnections(this.deps.connections(), from, to);
    } catch (e) {
      this.deps.log.error('moving the connections failed', errorMeta(e));
    }
    this.deps.moved();
  }

  /** Stops looking (the agent shuts down); reads under way are ignored. */
  stop(): void {
    this.core.onStop();
  }

  /**
   * Stops, and closes the connection to the database once a read under way is over (at most
   * the driver's server-selection wait, where no server answers).
   */
  async close(): Promise<void> {
    this.core.onStop();
    await this.inflight;
    await this.board?.close().catch(() => undefined);
    this.board = undefined;
  }

  private async readNow(): Promise<void> {
    const { session, log } = this.deps;
    let published;
    try {
      this.board ??= await this.deps.source();
      published = await this.board.read(session);
    } catch (e) {
      // the error names the servers, never the URI
      if (this.failures++ === 0) log.warn('cannot read where the client listens', errorMeta(e));
      return this.core.onReadFailed();
    }
    if (this.failures > 0) {
      log.info('read where the client listens again', { failed: this.failures });
    }
    this.failures = 0;
    this.core.onRead(published);
  }
}
