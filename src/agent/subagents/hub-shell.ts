import * as zmq from 'zeromq';
import { errorMeta } from '../../errors';
import type { SubAgentMessage } from '../../generated';
import { BadMessages } from '../../lib/bad-messages';
import type { Clock } from '../../lib/clock';
import type { Logger } from '../../lib/logger';
import type {
  ExitedEvent,
  FailedEvent,
  KillSignal,
  SpawnSpec,
  StartedEvent,
} from '../../components/executor/effects';
import { serverOptions, type ClientSecurity } from '../../transport/curve';
import { MAX_MESSAGE_BYTES } from '../../transport/frames';
import { ZapHandler } from '../../transport/zap';
import { SubAgentHubCore, type SubAgentHubOptions, type SubAgentOps } from './hub-core';
import { readSubAgentFrame, subAgentFrame } from './wire';

/** A sub-agent's launcher process (one srun step, or a local child): its end, and how to stop it. */
export interface LaunchedSubAgent {
  /** Resolves with how it ended (an exit code or signal, in words). */
  ended: Promise<string>;
  kill(): void;
}

export interface SubAgentHubShellOptions extends Partial<Omit<SubAgentHubOptions, 'nodes'>> {
  session: string;
  pilot: string;
  nodes: readonly string[];
  /** The pilot's key pair: the hub serves with it and admits it alone. Unset: insecure session. */
  curve?: ClientSecurity;
  /** The address to bind, e.g. `tcp://10.0.0.5:*` or `tcp://*:*` (port picked). */
  bind: string;
  /** The host sub-agents connect to, where `bind` names every interface. */
  advertise?: string;
  clock: Clock;
  log: Logger;
  /** Jobs an agent before this one gave the sub-agents (SubAgentHubCore.adopt). */
  adopted?: readonly { node: string; uid: string; attempt: number; spec: SpawnSpec }[];
  /** Starts `node`'s sub-agent, told to connect to `address`. */
  launch(node: string, address: string): LaunchedSubAgent;
  started(events: StartedEvent[]): void;
  exited(events: ExitedEvent[]): void;
  failed(events: FailedEvent[]): void;
  silent?(parts: { part: string; since: number }[]): void;
  nodeLost?(node: string, why: string): void;
}

/** Beats to every sub-agent this often (they give up on a hub silent for long). */
const BEAT_MS = 1_000;

/**
 * The main agent's end of its sub-agent links: a ROUTER that sub-agents (DEALERs, routing id =
 * their node) connect to, under CurveZMQ with the pilot's own keys; the decisions are
 * SubAgentHubCore's. Ops queued in one turn go out as one message per node.
 */
export class SubAgentHubShell {
  readonly core: SubAgentHubCore;
  private sock!: zmq.Router;
  private address_ = '';
  private bound_ = '';
  private chain: Promise<void> = Promise.resolve();
  private readonly launched = new Map<string, LaunchedSubAgent>();
  private readonly bad: BadMessages;
  private flushing = false;
  private closed = false;
  /** Ending: a sub-agent heard now (one that connects late) is told to end too. */
  private closing = false;
  private beat: NodeJS.Timeout | undefined;
  private readonly domain: string;
  private zap: ZapHandler | undefined;
  /** Names this hub in its beats and ops: a sub-agent that hears a new one says hello again. */
  readonly incarnation = `${process.pid}@${Date.now()}`;

  private constructor(private readonly opts: SubAgentHubShellOptions) {
    this.bad = new BadMessages(opts.log, opts.clock);
    this.domain = `subagents/${opts.pilot}`;
    this.core = new SubAgentHubCore(
      {
        send: (node, ops) =>
          this.send(node, { type: 'ops', ...this.names(node), hub: this.incarnation, ...ops }),
        startSubAgent: (node) => this.startSubAgent(node),
        started: (events) => opts.started(events),
        exited: (events) => opts.exited(events),
        failed: (events) => opts.failed(events),
        silent: (parts) => opts.silent?.(parts),
        nodeLost: (node, why) => {
          opts.log.error('sub-agent node given up', { node, why });
          opts.nodeLost?.(node, why);
        },
      },
      opts.clock,
      {
        nodes: opts.nodes,
        silentAfterMs: opts.silentAfterMs ?? 3_000,
        lostAfterMs: opts.lostAfterMs ?? 30_000,
        maxRestarts: opts.maxRestarts ?? 3,
      },
    );
    if (opts.adopted !== undefined) this.core.adopt(opts.adopted);
  }

  /** Binds, then starts a sub-agent on every node (they say hello when up). */
  static async start(opts: SubAgentHubShellOptions): Promise<SubAgentHubShell> {
    const hub = new SubAgentHubShell(opts);
    await hub.bind();
    hub.core.onStart();
    hub.beat = setInterval(() => hub.beatAll(), BEAT_MS);
    hub.beat.unref();
    return hub;
  }

  /** What was bound, its port resolved (`tcp://*:PORT`): where an agent started again binds. */
  get bound(): string {
    return this.bound_;
  }

  /** Where sub-agents connect (the bound address, its port resolved). */
  get address(): string {
    return this.address_;
  }

  /** Whether `node` has a sub-agent to run jobs. */
  serves(node: string): boolean {
    return this.core.serves(node);
  }

  spawn(node: string, spec: SpawnSpec, attempt: number): void {
    this.core.spawn(node, spec, attempt);
    this.flushSoon();
  }

  /** Signals a task's job on its node; false when no sub-agent runs it. */
  kill(uid: string, signal: KillSignal): boolean {
    const known = this.core.kill(uid, signal);
    if (known) this.flushSoon();
    return known;
  }

  /** Ends every sub-agent (they kill what they run), waits for their launchers, closes. */
  async close(waitMs = 10_000): Promise<void> {
    if (this.closed) return;
    this.closing = true;
    this.core.stop();
    clearInterval(this.beat);
    for (const node of this.opts.nodes) this.send(node, { type: 'end', ...this.names(node) });
    const ends = [...this.launched.values()].map((l) => l.ended);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)));
    await Promise.race([Promise.all(ends), late]);
    clearTimeout(timer);
    for (const l of this.launched.values()) l.kill();
    this.closed = true;
    await this.chain;
    this.sock.close();
    await this.zap?.release([this.domain]);
  }

  private async bind(): Promise<void> {
    const { curve } = this.opts;
    if (curve !== undefined) {
      this.zap = await ZapHandler.shared();
      this.zap.admit(this.domain, 'sub-agent', curve.publicKey, this.opts.log);
    }
    this.sock = new zmq.Router({
      linger: 0,
      maxMessageSize: MAX_MESSAGE_BYTES,
      ...serverOptions(
        curve === undefined ? undefined : { secretKey: curve.secretKey, domain: this.domain },
      ),
    });
    await this.sock.bind(this.opts.bind);
    const bound = this.sock.lastEndpoint ?? this.opts.bind;
    this.bound_ = bound.replace(/^tcp:\/\/0\.0\.0\.0:/, 'tcp://*:');
    const host = this.opts.advertise;
    this.address_ =
      host === undefined ? bound : bound.replace(/^tcp:\/\/(0\.0\.0\.0|\*)/, `tcp://${host}`);
    void this.receive();
  }

  private async receive(): Promise<void> {
    try {
      for await (const frames of this.sock) {
        const [id, frame] = frames;
        if (id === undefined || frame === undefined || frames.length !== 2) {
          this.bad.report('sub-agent message of the wrong shape', { frames: frames.length });
          continue;
        }
        const node = id.toString();
        const read = readSubAgentFrame(frame, { ...this.names(node) });
        if (!read.ok) {
          this.bad.report('sub-agent message refused', { node, why: read.why });
          continue;
        }
        this.handle(node, read.msg);
      }
    } catch (e) {
      if (!this.closed) this.opts.log.error('sub-agent hub stopped receiving', errorMeta(e));
    }
  }

  private handle(node: string, msg: SubAgentMessage): void {
    if (!this.opts.nodes.includes(node)) {
      this.bad.report('sub-agent of a node the pilot does not hold', { node });
      return;
    }
    if (this.closing) {
      this.send(node, { type: 'end', ...this.names(node) });
      return;
    }
    switch (msg.type) {
      case 'hello':
        this.opts.log.info('sub-agent up', { node, incarnation: msg.incarnation });
        return this.core.onHello(node, {
          incarnation: msg.incarnation,
          running: msg.running,
          ended: msg.ended,
        });
      case 'ack':
        return this.core.onAck(node, msg.seq);
      case 'beat':
        return this.core.onBeat(node);
      case 'events':
        this.core.onBeat(node);
        if (msg.started !== undefined) this.core.onStarted(node, msg.started);
        if (msg.ended !== undefined) this.core.onEnded(node, msg.ended);
        if (msg.warning !== undefined) {
          this.opts.log.warn('sub-agent', { node, warning: msg.warning });
        }
        return;
      case 'ops':
      case 'end':
        this.bad.report('a hub message sent to the hub', { node, type: msg.type });
        return;
    }
  }

  private startSubAgent(node: string): void {
    if (this.closed) return;
    const launched = this.opts.launch(node, this.address_);
    this.launched.set(node, launched);
    void launched.ended.then((why) => {
      if (this.launched.get(node) !== launched || this.closed) return;
      this.opts.log.warn('sub-agent launcher ended', { node, why });
      this.core.onLauncherEnded(node, why);
    });
  }

  private flushSoon(): void {
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(() => {
      this.flushing = false;
      this.core.flush();
    });
  }

  private beatAll(): void {
    for (const node of this.opts.nodes) {
      this.send(node, { type: 'beat', ...this.names(node), hub: this.incarnation });
    }
  }

  private names(node: string): { session: string; pilot: string; node: string } {
    return { session: this.opts.session, pilot: this.opts.pilot, node };
  }

  /** One send at a time (zeromq.js); to a node not connected, ROUTER drops it (ops are resent). */
  private send(node: string, msg: SubAgentMessage | (SubAgentOps & { type: 'ops' })): void {
    const frame = subAgentFrame(msg as SubAgentMessage);
    this.chain = this.chain
      .then(() => (this.closed ? undefined : this.sock.send([node, frame])))
      .catch((e: unknown) =>
        this.opts.log.warn('sub-agent send failed', { node, ...errorMeta(e) }),
      );
  }
}
