import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as zmq from 'zeromq';
import {
  DEFAULT_OUTPUT_CAP_BYTES,
  DEFAULT_OUTPUT_DISK_BYTES,
} from '../../components/executor/process/spawner-pool-options';
import { errorMeta } from '../../errors';
import type { AgentConfig, SubAgentMessage } from '../../generated';
import { BadMessages } from '../../lib/bad-messages';
import { deferred } from '../../lib/deferred';
import type { Logger } from '../../lib/logger';
import {
  SpawnerPool,
  type SpawnerPoolOptions,
} from '../../components/executor/process/spawner-pool';
import type { SpawnerStatus } from '../../components/executor/process/pool-keep';
import type { SpawnSpec } from '../../components/executor/effects';
import { clientOptions } from '../../transport/curve';
import { MAX_MESSAGE_BYTES } from '../../transport/frames';
import { readSubAgentFrame, subAgentFrame } from './wire';

/** Beats to the hub this often. */
const BEAT_MS = 1_000;
/** A hub silent this long (unless the config says) is gone: the sub-agent ends what it runs. */
const HUB_TIMEOUT_MS = 60_000;
/** How long helpers whose sub-agent died wait for the next one before they end their tasks. */
const KEEP_MS = 60_000;

/**
 * Where a node's helpers keep their sockets: node-local and short (a socket path has at most
 * 107 bytes), one directory per session, pilot and node, the agent user's alone.
 */
export function keepDirOf(cfg: Pick<AgentConfig, 'session' | 'pilot'>, node: string): string {
  const id = createHash('sha256').update(`${cfg.session}/${cfg.pilot}/${node}`).digest('hex');
  const dir = path.join(os.tmpdir(), `pf-keep-${id.slice(0, 16)}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

export interface SubAgentOptions {
  cfg: AgentConfig;
  node: string;
  /** The hub's address (the main agent's ROUTER). */
  hub: string;
  log: Logger;
  /** Spawner helpers here (default: the config's spawners, else 2). */
  spawners?: number;
  hubTimeoutMs?: number;
  keepMs?: number;
}

/**
 * One node's executing sub-agent: runs on that node (started once through the allocation's
 * launcher), holds spawner helpers there and starts the jobs the main agent's hub sends, with
 * no launcher per task; reports their starts and ends back. Its link is a DEALER (routing id:
 * the node) under CurveZMQ with the pilot's keys. `done` resolves with why it ended: 'end'
 * (the hub asked), or the hub was silent too long.
 */
export class SubAgent {
  private sock!: zmq.Dealer;
  private pool!: SpawnerPool;
  private chain: Promise<void> = Promise.resolve();
  private heard = Date.now();
  private timer: NodeJS.Timeout | undefined;
  private readonly finished = deferred<string>();
  private readonly bad: BadMessages;
  private stopping = false;
  /** The hub heard last (SubAgentHub.incarnation): a new one is told what runs here. */
  private hub: string | undefined;
  private steps: Promise<void> = Promise.resolve();
  readonly incarnation = `${process.pid}@${Date.now()}`;

  constructor(private readonly opts: SubAgentOptions) {
    this.bad = new BadMessages(opts.log);
  }

  /** Resolves with why the sub-agent ended, once its helpers and tasks are gone. */
  get done(): Promise<string> {
    return this.finished.promise;
  }

  async start(): Promise<void> {
    const { cfg, log } = this.opts;
    const poolOpts: SpawnerPoolOptions = {
      count: this.opts.spawners ?? cfg.spawners ?? 2,
      // its helpers outlive it: a sub-agent started again takes them over with their tasks
      keep: { dir: keepDirOf(cfg, this.opts.node), ms: this.opts.keepMs ?? KEEP_MS },
      logger: log,
      killGraceMs: cfg.killGraceMs ?? 3_000,
      // output 'stream' goes to this node's own stream files (their tails come back with exits)
      streamDir: path.join(cfg.sandbox, 'subagents', this.opts.node, 'streams'),
      streamLimits: {
        capBytes: cfg.outputCapBytes ?? DEFAULT_OUTPUT_CAP_BYTES,
        diskBytes: cfg.outputDiskBytes ?? DEFAULT_OUTPUT_DISK_BYTES,
      },
      handlers: {
        started: (events) => this.send({ type: 'events', ...this.names(), started: events }),
        exited: (events) =>
          this.send({
            type: 'events',
            ...this.names(),
            ended: events.map((e) => ({ ev: 'exited' as const, ...e })),
          }),
        failed: (events) =>
          this.send({
            type: 'events',
            ...this.names(),
            ended: events.map((e) => ({ ev: 'failed' as const, ...e })),
          }),
        unusable: (message) => {
          this.send({ type: 'events', ...this.names(), warning: message });
          void this.stop(`cannot start tasks: ${message}`);
        },
      },
    };
    const status = await this.openPool(poolOpts);
    const curve = cfg.curve;
    this.sock = new zmq.Dealer({
      routingId: this.opts.node,
      linger: 1_000,
      maxMessageSize: MAX_MESSAGE_BYTES,
      ...clientOptions(
        curve === undefined
          ? undefined
          : { serverKey: curve.publicKey, publicKey: curve.publicKey, secretKey: curve.secretKey },
      ),
    });
    this.sock.connect(this.opts.hub);
    this.hello(status);
    void this.receive();
    this.timer = setInterval(() => this.tick(), BEAT_MS);
    log.info('sub-agent started', { node: this.opts.node, hub: this.opts.hub, pid: process.pid });
  }

  /**
   * Takes over the helpers a previous sub-agent of this node left (their sockets), with what
   * they run and ended; else starts new ones.
   */
  private async openPool(
    opts: SpawnerPoolOptions,
  ): Promise<Pick<SpawnerStatus, 'running' | 'ended'>> {
    const dir = opts.keep!.dir;
    const left = readdirSync(dir, { withFileTypes: true }).filter(
      (e) => e.isSocket() && /^helper-\d+\.sock$/.test(e.name),
    );
    if (left.length > 0) {
      try {
        this.pool = await SpawnerPool.attach({ ...opts, count: left.length });
        const status = await this.pool.status();
        this.opts.log.info('sub-agent took over its helpers', {
          helpers: left.length,
          running: status.running.length,
          ended: status.ended.length,
        });
        return status;
      } catch (e) {
        this.opts.log.warn('could not take over the helpers left here', errorMeta(e));
      }
    }
    this.pool = await SpawnerPool.start(opts);
    return { running: [], ended: [] };
  }

  /** Says who it is and what its helpers run and ended (at start, and to a new hub). */
  private hello(status: Pick<SpawnerStatus, 'running' | 'ended'>): void {
    this.send({
      type: 'hello',
      ...this.names(),
      incarnation: this.incarnation,
      running: status.running,
      ended: status.ended.map((e) => ({ ...e })),
    });
  }

  /**
   * A hub heard for the first time: the main agent was started again (agent.restarts) and
   * listens where the one before it did, and knows nothing of this node until it hears what
   * runs here. The first hub heard is told too: the hello at start may have gone to one that
   * died meanwhile (a second hello to the same hub changes nothing).
   */
  private newHub(hub: string | undefined): void {
    if (hub === undefined || hub === this.hub) return;
    this.hub = hub;
    this.opts.log.info('saying hello to the main agent', { hub });
    this.inOrder(() =>
      this.pool.status().then(
        (status) => this.hello(status),
        (e: unknown) => this.opts.log.error('helpers did not say what they run', errorMeta(e)),
      ),
    );
  }

  /**
   * Runs `step` after the steps before it: ops that come while a hello's status is asked wait
   * for it, so that the hello does not say that jobs the hub sent since are missing.
   */
  private inOrder(step: () => void | Promise<void>): void {
    this.steps = this.steps.then(step).catch((e: unknown) => {
      this.opts.log.error('sub-agent step failed', errorMeta(e));
    });
  }

  /** Kills what runs, closes the link; `done` resolves with `why`. */
  async stop(why: string): Promise<void> {
    if (this.stopping) return this.finished.promise.then(() => undefined);
    this.stopping = true;
    clearInterval(this.timer);
    try {
      await this.pool.close();
      // its helpers are gone with their sockets: nothing is left for a next sub-agent to take
      rmSync(keepDirOf(this.opts.cfg, this.opts.node), { recursive: true, force: true });
    } catch (e) {
      this.opts.log.error('spawner helpers did not close', errorMeta(e));
    }
    await this.chain;
    this.sock.close();
    this.opts.log.info('sub-agent ended', { why });
    this.finished.resolve(why);
  }

  private tick(): void {
    const silent = Date.now() - this.heard;
    const limit = this.opts.hubTimeoutMs ?? HUB_TIMEOUT_MS;
    if (silent >= limit) {
      void this.stop(`the main agent was silent for ${Math.round(silent / 1000)} s`);
      return;
    }
    this.send({ type: 'beat', ...this.names() });
  }

  private async receive(): Promise<void> {
    const peer = { session: this.opts.cfg.session, pilot: this.opts.cfg.pilot };
    try {
      for await (const [frame] of this.sock) {
        if (frame === undefined) continue;
        const read = readSubAgentFrame(frame, peer);
        if (!read.ok) {
          this.bad.report('hub message refused', { why: read.why });
          continue;
        }
        this.heard = Date.now();
        if (read.msg.type === 'beat' || read.msg.type === 'ops') this.newHub(read.msg.hub);
        this.handle(read.msg);
      }
    } catch (e) {
      if (!this.stopping) this.opts.log.error('sub-agent stopped receiving', errorMeta(e));
    }
  }

  private handle(msg: SubAgentMessage): void {
    switch (msg.type) {
      case 'ops':
        return this.inOrder(() => {
          for (const spec of msg.spawn) this.pool.spawn(spec as unknown as SpawnSpec);
          for (const k of msg.kill) this.pool.kill(k.uid, k.signal);
          this.send({ type: 'ack', ...this.names(), seq: msg.seq });
        });
      case 'end':
        void this.stop('the main agent ended it');
        return;
      case 'beat':
        return;
      case 'hello':
      case 'ack':
      case 'events':
        this.bad.report('a sub-agent message sent to a sub-agent', { type: msg.type });
        return;
    }
  }

  private names(): { session: string; pilot: string; node: string } {
    return { session: this.opts.cfg.session, pilot: this.opts.cfg.pilot, node: this.opts.node };
  }

  private send(msg: SubAgentMessage): void {
    if (this.sock === undefined) return;
    const frame = subAgentFrame(msg);
    this.chain = this.chain
      .then(() => (this.sock.closed ? undefined : this.sock.send(frame)))
      .catch((e: unknown) => this.opts.log.warn('send to the hub failed', errorMeta(e)));
  }
}
