import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { managersOf, type Managers } from '../client/control/managers';
import type { PilotManager } from '../client/pilot-manager';
import type { Journal } from '../client/resume/journal';
import { runtimeOf } from '../client/runtime/runtime';
import type { TaskManager } from '../client/task-manager';
import { UsageError } from '../errors';
import type { RouterConfig, RouterStatus } from '../generated';
import { systemClock, type Clock, type Timer } from '../lib/clock';
import { silentLogger, type Logger } from '../lib/logger';
import { RouterCore, type RouterSnapshot } from './core';
import type { RouterEvent } from './effects';
import { createFrontServer } from './front-server';
import { routerHandler } from './http-front';
import { compileRouterConfig, type CompiledRouterConfig } from './models';
import { RouterProxy } from './proxy';
import { REPLICA_PREFIX, ReplicaTasks } from './task-shell';

export interface RouterOptions {
  /** The models (schemas/router-config.schema.json); checked, every error naming its path. */
  config: RouterConfig;
  /** Where it listens: loopback by default; another address needs `insecureHttp`. */
  host?: string;
  /** 0 (default): a free port. */
  port?: number;
  /** The bearer token its clients send (default: a new random one, in `router.token`). */
  token?: string;
  /** Listen on an address other than loopback without TLS: anyone who can reach it may try. */
  insecureHttp?: boolean;
  log?: Logger;
}

/** A model router serving a session's pilots: an OpenAI-compatible front at `url`. */
export interface ModelRouter {
  /** `http://host:port` (the OpenAI base URL is `${url}/v1`). */
  readonly url: string;
  readonly token: string;
  snapshot(): RouterSnapshot;
  /** Stops every replica of the model; resolves with their uids once their tasks ended. */
  unload(model: string): Promise<string[]>;
  /** Answers what is held with 503, stops the replicas (waiting for their ends), stops listening. */
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);
/** How long close() waits for its replicas' ends (a stop takes the kill grace, 3 s by default). */
const CLOSE_WAIT_MS = 60_000;

/**
 * Starts a model router over the session of `tmgr` and `pmgr` (docs/router.md): each model
 * of `config` is started as a service task on one of the pilots when a request asks for it.
 */
export async function startRouter(
  tmgr: TaskManager,
  pmgr: PilotManager,
  opts: RouterOptions,
): Promise<ModelRouter> {
  const config = compileRouterConfig(opts.config);
  const host = opts.host ?? '127.0.0.1';
  if (!LOOPBACK.has(host) && opts.insecureHttp !== true) {
    throw new UsageError(
      `startRouter: host '${host}' is not loopback: give insecureHttp: true to listen there without TLS`,
    );
  }
  const token = opts.token ?? randomBytes(24).toString('base64url');
  const log = opts.log ?? silentLogger;
  const parts = new RouterParts(config, tmgr, pmgr, systemClock, log);
  const front = createFrontServer(routerHandler(parts, { token }));
  await new Promise<void>((resolve, reject) => {
    front.server.once('error', reject);
    front.server.listen(opts.port ?? 0, host, () => resolve());
  });
  const address = front.server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  parts.url = `http://${shown}:${address.port}`;
  return {
    url: parts.url,
    token,
    snapshot: () => parts.snapshot(),
    unload: (model) => parts.unload(model),
    close: async () => {
      await parts.close();
      await front.close();
    },
  };
}

/** The core with its two shells (replicas as tasks, requests through the proxy), joined. */
export class RouterParts {
  readonly proxy: RouterProxy;
  private readonly core: RouterCore;
  private readonly tasks: ReplicaTasks;
  private readonly ends = new Map<string, (() => void)[]>();
  private readonly listeners = new Set<(e: RouterEvent) => void>();
  private readonly journal: Journal;
  private readonly managers: Managers;
  /** Where it answers, where it has an address of its own (startRouter). */
  url: string | undefined;

  constructor(
    readonly config: CompiledRouterConfig,
    tmgr: TaskManager,
    pmgr: PilotManager,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {
    this.proxy = new RouterProxy(log);
    this.tasks = new ReplicaTasks(tmgr, pmgr, clock, log);
    // replica uids unique to this router in its session: a restarted one names none again
    const prefix = `${REPLICA_PREFIX}${clock.now().toString(36)}${randomBytes(2).toString('hex')}.`;
    this.core = new RouterCore(
      config,
      {
        startReplica: (id, m, pilot, prefer) => this.tasks.startReplica(id, m, pilot, prefer),
        stopReplica: (id) => this.tasks.stopReplica(id),
        dispatch: (req, id, endpoint) => this.proxy.dispatch(req, id, endpoint),
        reject: (req, error) => this.proxy.reject(req, error),
        record: (e) => this.heard(e),
      },
      clock,
      prefix,
    );
    this.proxy.attach(this.core);
    this.tasks.attach(this.core, prefix);
    const rt = runtimeOf(tmgr);
    this.journal = rt.journal;
    this.managers = managersOf(rt);
    this.managers.routers.add(this);
  }

  snapshot(): RouterSnapshot {
    return this.core.snapshot();
  }

  /** How it stands, for `pilotfish status`: its snapshot, and its own address if it has one. */
  status(): RouterStatus {
    return { ...(this.url !== undefined ? { url: this.url } : {}), ...this.core.snapshot() };
  }

  /** Follows what the router does (metrics, status); returns how to stop. */
  onEvent(fn: (e: RouterEvent) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  async unload(model: string): Promise<string[]> {
    const ids = this.core.unload(model);
    await Promise.all(ids.map((id) => this.ended(id)));
    return ids;
  }

  async close(): Promise<void> {
    this.managers.routers.delete(this);
    this.proxy.close();
    const live = this.core.close(); // each stopped through its task (stopReplica)
    // a replica whose end is never heard (its agent gone) must not hold the close up: the
    // session's own close ends what is left
    let timer: Timer | undefined;
    const late = new Promise<void>((resolve) => {
      timer = this.clock.setTimeout(() => {
        this.log.warn('router: replicas not ended in time at close', { replicas: live });
        resolve();
      }, CLOSE_WAIT_MS);
    });
    await Promise.race([Promise.all(live.map((id) => this.ended(id))), late]);
    timer?.cancel();
    this.tasks.close();
  }

  private ended(id: string): Promise<void> {
    return new Promise((resolve) => {
      const list = this.ends.get(id) ?? [];
      list.push(resolve);
      this.ends.set(id, list);
    });
  }

  private heard(e: RouterEvent): void {
    // held, not refused, when the disk is full (journal.ts): what it did is only told
    this.journal.append({ t: 'router', ts: this.clock.now(), event: e });
    if (e.type === 'replica_ended') {
      if (e.endpoint !== undefined) this.proxy.forget(e.endpoint);
      for (const resolve of this.ends.get(e.replica) ?? []) resolve();
      this.ends.delete(e.replica);
    }
    for (const fn of this.listeners) fn(e);
  }
}
