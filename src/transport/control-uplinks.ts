import * as zmq from 'zeromq';
import type { ControlMessage } from '../generated';
import { errorMeta } from '../errors';
import { BadMessages } from '../lib/bad-messages';
import type { Logger } from '../lib/logger';
import { controlMessageOf, type ControlBus } from './control-bus';
import { serverOptions, type ServerSecurity } from './curve';
import { MAX_MESSAGE_BYTES, decodedMessages } from './frames';

/** What an agent may say to its client, each naming the pilot it is about. */
const FROM_AGENTS = new Set<ControlMessage['type']>([
  'agent_ready',
  'agent_heartbeat',
  'agent_final',
  'agent_waits',
  'agent_returns',
  'agent_warning',
]);

/**
 * The client's end of its agents' control messages: one bound socket per pilot (an agent
 * publishes into its own, admitted by the pilot's key alone), so whatever arrives on it is known
 * to come from that pilot. A message must name the session and that pilot, and be one an agent
 * may send; anything else is refused and counted. Accepted messages go to the client's bus
 * listeners; probes go back out on the bus, so the agent sees both directions work. Agents no
 * longer hear each other (each heard every agent's heartbeats before).
 */
export class ControlUplinks {
  private readonly links = new Map<string, { sock: zmq.Subscriber; loop: Promise<void> }>();
  private readonly bad: BadMessages;
  private refusedCount = 0;

  constructor(
    /** Where accepted messages go (its listeners hear them). */
    readonly bus: ControlBus,
    private readonly log: Logger,
  ) {
    this.bad = new BadMessages(log);
  }

  /** Binds pilot's uplink at `address` (its old one on resume) and returns where it listens. */
  async add(pilot: string, address: string, security: ServerSecurity | undefined): Promise<string> {
    const sock = new zmq.Subscriber({
      linger: 0,
      maxMessageSize: MAX_MESSAGE_BYTES,
      ...serverOptions(security),
    });
    sock.subscribe();
    await sock.bind(address);
    this.links.set(pilot, { sock, loop: this.run(pilot, sock) });
    return sock.lastEndpoint ?? address;
  }

  /** Messages refused so far (wrong session, pilot or type; malformed). */
  get refused(): number {
    return this.refusedCount;
  }

  async close(): Promise<void> {
    for (const { sock } of this.links.values()) sock.close();
    await Promise.allSettled([...this.links.values()].map((l) => l.loop));
    this.links.clear();
  }

  private async run(pilot: string, sock: zmq.Subscriber): Promise<void> {
    try {
      for await (const m of decodedMessages(sock)) {
        const msg = controlMessageOf(m, 'refused', { pilot }, (kind, meta) =>
          this.refuse(kind, meta),
        );
        if (msg === undefined) continue;
        if (msg.type === 'probe') {
          void this.bus.echo(msg).catch(() => undefined); // the agent probes again
          continue;
        }
        const problem = this.check(pilot, msg);
        if (problem !== undefined) {
          this.refuse('control message refused', { pilot, type: msg.type, problem });
          continue;
        }
        this.bus.deliver(msg);
      }
    } catch (e) {
      if (!sock.closed) this.log.error('control uplink stopped', { pilot, ...errorMeta(e) });
    }
  }

  private check(
    pilot: string,
    msg: Exclude<ControlMessage, { type: 'probe' }>,
  ): string | undefined {
    if (msg.session !== this.bus.session) return `names session '${msg.session}'`;
    if (!FROM_AGENTS.has(msg.type)) return `an agent may not send '${msg.type}'`;
    const about = (msg as { pilot?: string }).pilot;
    if (about !== pilot) return `names pilot '${about}' on the uplink of ${pilot}`;
    return undefined;
  }

  private refuse(kind: string, meta: Record<string, unknown>): void {
    this.refusedCount++;
    this.bad.report(kind, meta);
  }
}
