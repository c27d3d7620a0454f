import type { AgentConfig } from '../../generated';
import type { KeyPair } from '../../transport/curve';
import type { ControlUplinks } from '../../transport/control-uplinks';
import type { Logger } from '../../lib/logger';
import { AgentWaits } from './agent-waits';
import { FileServer } from '../files/server';
import type { StoreServer } from '../../updater/embedded/store-server';
import type { StateStore } from '../../updater/state-store';
import type { ManagerPipeline } from '../pipeline/manager-pipeline';
import type { SessionSecurity } from './session-security';

/** Where one pilot's agent connects: sockets of that pilot alone. */
export interface PilotPorts {
  /** It pulls its tasks here. */
  agentInput: string;
  /** It hands tasks back here. */
  managerOutput: string;
  /** It says agent_ready, agent_heartbeat, agent_final here. */
  controlUp: string;
  /** Its UpdateWorkers write notifications here (none where the session's store is MongoDB). */
  store?: string;
  /** Its file channel (the transfer staging action); absent in journals written before it. */
  files?: string;
}

/** What the journal keeps of a pilot's link, so that a resumed session binds it again. */
export interface PilotLink {
  ports: PilotPorts;
  /** The pilot's public key (absent in an insecure session); its secret is the agent's. */
  publicKey?: string;
}

/**
 * Each pilot talks to its session over sockets of its own, each admitting the pilot's key
 * alone: whatever arrives on them is known to come from that pilot, so it may speak only of
 * itself and the tasks it was given (checked where each kind of message arrives).
 */
export class PilotLinks {
  private readonly links = new Map<string, PilotLink>();
  /** Key pairs issued by this client (a resumed one knows only the public halves). */
  private readonly keys = new Map<string, KeyPair>();
  /** The client's end of the pilots' file channels: `allow`/`forget` what tasks transfer. */
  readonly files: FileServer;
  /** What each pilot's agent says its waiting tasks wait for (explain reads it). */
  readonly waits: AgentWaits;

  constructor(
    private readonly deps: {
      security: SessionSecurity | undefined;
      pipeline: ManagerPipeline;
      /** The embedded store's server: each pilot gets a socket of it. */
      store: StoreServer | undefined;
      /** Or the MongoDB database the agents' UpdateWorkers write to themselves. */
      mongodb: { uri: string; db: string } | undefined;
      uplinks: ControlUplinks;
      session: string;
      log: Logger;
      /** Where pilot sockets listen, e.g. `tcp://127.0.0.1:0`. */
      listenAt: string;
      /** The control socket every agent subscribes to. */
      controlDown: string;
      /** A resumed session: which tasks the store says were given to each pilot. */
      given: () => Promise<ReadonlyMap<string, readonly { uid: string; attempt: number }[]>>;
    },
  ) {
    this.files = new FileServer({
      session: deps.session,
      log: deps.log.child({ component: 'FileServer' }),
    });
    const owns = (pilot: string, uid: string, attempt: number): boolean =>
      deps.pipeline.owns(pilot, uid, attempt);
    this.waits = new AgentWaits(owns, deps.log.child({ component: 'AgentWaits' }));
    deps.uplinks.bus.on(this.waits.hear);
    deps.uplinks.bus.on((m) => {
      if (m.type === 'agent_returns') deps.pipeline.takeBack(m.pilot, m.tasks, m.reason);
    });
  }

  /** The control socket every agent subscribes to. */
  get controlDown(): string {
    return this.deps.controlDown;
  }

  /**
   * Issues the pilot's keys and binds its sockets (`before`: a pilot of a resumed session, its
   * key, and the ports its agent connects to unless it moves to fresh ones).
   */
  async open(pilot: string, before?: Partial<PilotLink>): Promise<PilotLink> {
    const { security, pipeline, store, uplinks, listenAt } = this.deps;
    let publicKey: string | undefined;
    if (security !== undefined) {
      if (before?.publicKey !== undefined) {
        publicKey = before.publicKey;
        security.admit(pilot, publicKey);
      } else {
        const keys = security.issue(pilot);
        this.keys.set(pilot, keys);
        publicKey = keys.publicKey;
      }
    }
    // a resumed session's agents speak of the tasks they were given before: known before they
    // reconnect, or their hand-backs and notifications would be refused
    if (before !== undefined) pipeline.own(pilot, (await this.deps.given()).get(pilot) ?? []);
    const server = security?.forPilot(pilot);
    const at = before?.ports;
    const queues = await pipeline.addPilotQueues(pilot, server, {
      agentInput: at?.agentInput,
      managerOutput: at?.managerOutput,
    });
    const storeAt = await store?.listen(
      pilot,
      at?.store ?? listenAt,
      server,
      (kind, uid, attempt) =>
        kind === 'pilot' ? uid === pilot : pipeline.owns(pilot, uid, attempt),
    );
    const controlUp = await uplinks.add(pilot, at?.controlUp ?? listenAt, server);
    const filesAt = await this.files.listen(pilot, at?.files ?? listenAt, server);
    const link: PilotLink = {
      ports: {
        ...queues,
        controlUp,
        ...(storeAt !== undefined ? { store: storeAt } : {}),
        files: filesAt,
      },
      ...(publicKey !== undefined ? { publicKey } : {}),
    };
    this.links.set(pilot, link);
    return link;
  }

  /** Messages refused on the pilots' sockets (and the store's), see docs/security.md. */
  refused(): number {
    const { uplinks, store } = this.deps;
    return uplinks.refused + (store?.refused ?? 0) + this.files.refused + this.waits.refused;
  }

  /** Closes the file channels (the other pilot sockets close with their owners). */
  close(): Promise<void> {
    return this.files.close();
  }

  /**
   * The addresses and keys a new agent of `pilot` needs (its bootstrap file, mode 0600), and
   * the MongoDB URI of a session whose store it is (it may hold a password: the file is the
   * only place it goes, and no log line names it).
   */
  agentConfig(pilot: string): Pick<AgentConfig, 'addresses' | 'curve' | 'mongodb'> {
    const link = this.links.get(pilot);
    if (link === undefined) throw new Error(`no link for pilot ${pilot}`);
    const { agentInput, managerOutput, controlUp, store, files } = link.ports;
    const addresses = {
      agentInput,
      managerOutput,
      controlUp,
      controlDown: this.deps.controlDown,
      ...(store !== undefined ? { store } : {}),
      ...(files !== undefined ? { files } : {}),
    };
    const { mongodb } = this.deps;
    // uri and db alone: the config's schema admits nothing else (a StoreChoice has `kind`)
    const where = {
      addresses,
      ...(mongodb !== undefined ? { mongodb: { uri: mongodb.uri, db: mongodb.db } } : {}),
    };
    const keys = this.keys.get(pilot);
    const security = this.deps.security;
    if (security === undefined) return where;
    if (keys === undefined) throw new Error(`pilot ${pilot} was issued its keys by another client`);
    return { ...where, curve: security.client(keys) };
  }
}

/**
 * Pilot -> the tasks given to it and the attempt, from the store (TMGR_STAGING_INPUT_PENDING
 * names the pilot); an attempt that a later one replaced is fenced (attempt 0).
 */
export async function givenInStore(
  store: StateStore,
): Promise<ReadonlyMap<string, readonly { uid: string; attempt: number }[]>> {
  const latest = new Map<string, number>();
  const given = new Map<string, Map<string, number>>();
  for (const n of await store.history()) {
    if (n.kind !== 'task') continue;
    if ((latest.get(n.uid) ?? 0) < n.attempt) latest.set(n.uid, n.attempt);
    const pilot = n.detail?.pilot;
    if (typeof pilot !== 'string') continue;
    let tasks = given.get(pilot);
    if (tasks === undefined) given.set(pilot, (tasks = new Map<string, number>()));
    tasks.set(n.uid, Math.max(tasks.get(n.uid) ?? 0, n.attempt));
  }
  const out = new Map<string, { uid: string; attempt: number }[]>();
  for (const [pilot, tasks] of given) {
    out.set(
      pilot,
      [...tasks].map(([uid, attempt]) => ({
        uid,
        attempt: attempt < (latest.get(uid) ?? 0) ? 0 : attempt,
      })),
    );
  }
  return out;
}
