import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { PilotDescription, RouterConfig } from '../generated';
import { UsageError } from '../errors';
import { systemClock } from '../lib/clock';
import type { Logger } from '../lib/logger';
import { makePrivateDir, PRIVATE_FILE } from '../lib/private-files';
import { PilotManager } from '../client/pilot-manager';
import { controlContextOf, Session } from '../client/session';
import { runtimeOf } from '../client/runtime/runtime';
import { TaskManager } from '../client/task-manager';
import { compileRouterConfig } from '../router/models';
import { RouterParts } from '../router/router';
import { markOf } from '../updater/store-choice';
import { buildApi } from './api';
import { LiveTokens } from './auth';
import type { ServiceContext } from './context';
import { DeletedTasks } from './deleted';
import { EventFeed } from './event-feed';
import { TokenStore, TOKENS_FILE } from './tokens';

// `pilotfish serve` (docs/service.md): one session kept open behind the HTTP API. Its
// directory holds the tokens, `serve.json` (which session it serves) and `sessions/`; started
// again on the same directory it resumes that session (Session.open's resume): the tasks keep
// their uids and states, none runs twice, the event stream's ids go on.

/** What a started service says of itself, in `<dir>/serve.json` too (0600). */
export interface ServeInfo {
  session: string;
  url: string;
  pid: number;
}

export const SERVE_FILE = 'serve.json';

export interface ServeOptions {
  /** The service's directory (made 0700 if missing). */
  dir: string;
  /** Where it listens: loopback by default; any other address needs `tls` or `insecureHttp`. */
  host?: string;
  /** A Unix socket to listen on (made 0600) instead of a TCP address. */
  socket?: string;
  /** HTTPS with this certificate and key (PEM files). */
  tls?: { cert: string; key: string };
  /** 0 (default): a free port, named in serve.json. */
  port?: number;
  /**
   * The pilots of a new session (default: one local pilot with every core); on a resumed one
   * whose pilots all ended, the pilots to start instead of the same ones again.
   */
  pilots?: PilotDescription[];
  /** Requests a minute per token (default 120,000; a token's own rate wins; 0: no limit). */
  ratePerMinute?: number;
  /** Says by name that a non-loopback address without TLS is wanted. */
  insecureHttp?: boolean;
  /** A model router on the same address and tokens (schemas/router-config.schema.json). */
  router?: RouterConfig;
  log?: Logger;
  version?: string;
}

export interface RunningService {
  readonly info: ServeInfo;
  readonly session: Session;
  readonly app: FastifyInstance;
  /** Stops serving, then closes the session (its pilots end). */
  stop(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** Opens (or resumes) the service's session and serves its API until stop(). */
export async function startService(opts: ServeOptions): Promise<RunningService> {
  const host = opts.host ?? '127.0.0.1';
  if (
    !LOOPBACK.has(host) &&
    opts.socket === undefined &&
    opts.tls === undefined &&
    opts.insecureHttp !== true
  ) {
    throw new UsageError(
      `serving on ${host} would send tokens and tasks in clear over the network: listen on loopback (the default) or a Unix socket, give --tls-cert and --tls-key, or say --insecure-http to mean it`,
    );
  }
  const https = opts.tls === undefined ? undefined : readTls(opts.tls);
  makePrivateDir(opts.dir);
  const live = liveService(opts.dir);
  if (live !== undefined) {
    throw new UsageError(`a service (pid ${live.pid}) serves ${opts.dir} already, at ${live.url}`);
  }
  const { store } = TokenStore.open(opts.dir);
  const tokens = new LiveTokens(
    store,
    path.join(opts.dir, TOKENS_FILE),
    () => TokenStore.open(opts.dir).store,
  );
  const sessions = path.join(opts.dir, 'sessions');
  const previous = servedSession(opts.dir);
  const session = await Session.open({
    dir: sessions,
    ...(previous !== undefined ? { resume: previous } : {}),
  });
  let app: FastifyInstance | undefined;
  let router: RouterParts | undefined;
  let closing = false;
  try {
    // made in this order at every start: the journal names managers by their order
    const late: { tmgr?: TaskManager } = {};
    const pmgr = new PilotManager(session, {
      replaceLost: (_lost, replacement) => late.tmgr?.addPilots([replacement]),
    });
    const tmgr = (late.tmgr = new TaskManager(session));
    if (previous !== undefined) await session.replay();
    // a session served before keeps its pilots; where they all ended (a stop ends them), new
    // ones of the same descriptions (or those given now) take its tasks
    const before = pmgr.list();
    tmgr.addPilots(before);
    if (before.every((p) => p.final)) {
      const asked =
        opts.pilots ??
        (before.length > 0 ? before.map((p) => p.description) : [{ resource: 'local' }]);
      tmgr.addPilots(await pmgr.submitPilots(asked));
    }
    const rt = runtimeOf(session);
    const deleted = new DeletedTasks(opts.dir);
    const files = {
      artifacts: path.join(opts.dir, 'artifacts'),
      files: path.join(opts.dir, 'files'),
    };
    makePrivateDir(files.artifacts);
    makePrivateDir(files.files);
    // it ends with the store: the streams see the session's last events, then end
    const events = new EventFeed(rt.store, rt.log);
    const mark = await Promise.resolve(markOf(rt.store)).catch(() => undefined);
    // without a mark (MongoDB not answering now) every stream reads the store on its own
    if (mark !== undefined) events.start(mark);
    const ctx: ServiceContext = {
      session,
      tmgr,
      pmgr,
      control: controlContextOf(session),
      taskOf: (uid) => (deleted.has(uid) ? undefined : rt.tasks.get(uid)),
      storedHistory: (uid) => rt.store.history(uid),
      tasks: function* () {
        for (const t of rt.tasks.values()) if (!deleted.has(t.uid)) yield t;
      },
      freshUid: (taken) => rt.tasks.nextUid((u) => deleted.has(u) || taken(u)),
      deleted,
      files,
      events,
    };
    if (opts.router !== undefined) {
      router = new RouterParts(compileRouterConfig(opts.router), tmgr, pmgr, systemClock, rt.log);
    }
    app = await buildApi(ctx, {
      ...(router !== undefined ? { router } : {}),
      tokens,
      log: rt.log,
      closing: () => closing,
      version: opts.version ?? '0',
      ...(opts.ratePerMinute !== undefined ? { ratePerMinute: opts.ratePerMinute } : {}),
      ...(https !== undefined ? { https } : {}),
    });
    let url: string;
    if (opts.socket !== undefined) {
      rmSync(opts.socket, { force: true }); // a socket left by a killed service
      await app.listen({ path: opts.socket });
      chmodSync(opts.socket, PRIVATE_FILE);
      url = `unix:${opts.socket}`;
    } else {
      await app.listen({ host, port: opts.port ?? 0 });
      const a = app.server.address() as AddressInfo;
      const shown = a.family === 'IPv6' ? `[${a.address}]` : a.address;
      url = `${https !== undefined ? 'https' : 'http'}://${shown}:${a.port}`;
    }
    const info: ServeInfo = { session: session.uid, url, pid: process.pid };
    writeFileSync(path.join(opts.dir, SERVE_FILE), `${JSON.stringify(info)}\n`, {
      mode: PRIVATE_FILE,
    });
    const served = app;
    let stopping: Promise<void> | undefined;
    return {
      info,
      session,
      app: served,
      stop: () =>
        (stopping ??= (async () => {
          closing = true;
          // open event streams end with the session's store; the server waits for them
          const closed = served.close();
          await router?.close(); // its replicas stopped first, each waited for
          await session.close();
          await closed;
        })()),
    };
  } catch (e) {
    closing = true;
    await router?.close();
    await app?.close();
    await session.close();
    throw e;
  }
}

/** The certificate and key of `tls`, read (a file that cannot be read: UsageError). */
function readTls(tls: { cert: string; key: string }): { cert: Buffer; key: Buffer } {
  const read = (file: string, what: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (e) {
      throw new UsageError(`cannot read the TLS ${what} ${file}: ${(e as Error).message}`);
    }
  };
  return { cert: read(tls.cert, 'certificate'), key: read(tls.key, 'key') };
}

/** The uid of the session a service in `dir` served before, if any. */
function servedSession(dir: string): string | undefined {
  const file = path.join(dir, SERVE_FILE);
  if (!existsSync(file)) return undefined;
  try {
    const uid = (JSON.parse(readFileSync(file, 'utf8')) as Partial<ServeInfo>).session;
    if (typeof uid === 'string' && existsSync(path.join(dir, 'sessions', uid))) return uid;
  } catch {
    // unreadable: a new session, said by the new serve.json
  }
  return undefined;
}

/** The service that serve.json names, if its process still runs (a session has one client). */
function liveService(dir: string): ServeInfo | undefined {
  try {
    const info = JSON.parse(readFileSync(path.join(dir, SERVE_FILE), 'utf8')) as ServeInfo;
    if (info.pid === process.pid) return undefined;
    const cmdline = readFileSync(`/proc/${info.pid}/cmdline`, 'utf8');
    return /pilotfish|cli\/main\.js|serve/.test(cmdline) ? info : undefined;
  } catch {
    return undefined; // none, or its process is gone
  }
}
