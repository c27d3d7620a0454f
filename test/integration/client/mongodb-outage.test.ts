import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { BSON } from 'mongodb';
import { PilotManager } from '../../../src/client/pilot-manager';
import { Session } from '../../../src/client/session';
import type { Task } from '../../../src/client/task';
import { TaskManager } from '../../../src/client/task-manager';
import type { TaskDescription } from '../../../src/generated';
import { deferred, withTimeout } from '../../../src/lib/deferred';
import { PILOT_STATES } from '../../../src/states/pilot-model';
import { isQuiet, isSupersedable } from '../../../src/states/quiet-states';
import { TASK_STATES, type TaskState } from '../../../src/states/task-model';
import { MongoStore } from '../../../src/updater/mongodb/store';
import { parseMongoUri } from '../../../src/updater/mongodb/uri';
import { StoreUnreachableError, type StoreCondition } from '../../../src/updater/state-store';
import { agentPids, killAgents } from '../../support/client-child';
import { closedGate } from '../../support/flock-gate';
import {
  proxiedUri,
  removeMongoSession,
  removeMongoSessions,
  serverOf,
  storedKeys,
  unproxiable,
} from '../../support/mongodb';
import { waitForExit } from '../../support/processes';
import { TcpProxy, WireFrames, wireMessageOf, type CutPoint } from '../../support/tcp-proxy';
import { makeNotes } from '../updater/helpers';

/**
 * A MongoDB session's server goes away mid-run and comes back (docs/state-store.md, the
 * mongodb backend). The outage is real: every connection of the client and the
 * agent to the server goes through a TCP proxy (test/support/tcp-proxy.ts) that the test cuts
 * and restores; the agent's ZeroMQ links to its client do not, so only the store path fails.
 * Needs a real server: set PILOTFISH_MONGODB_URI (one host, no TLS), e.g.
 * mongodb://127.0.0.1:27017; without it the suite is reported skipped with the reason.
 */
const MONGO_URI = process.env['PILOTFISH_MONGODB_URI'];
const skipped = skipReason();
const TITLE = 'a MongoDB session whose server goes away and comes back';
const d = skipped === undefined ? describe : describe.skip;

/** The database of the MongoStore tests (as the conformance suite's). */
const TEST_DB = 'pilotfish_test';
const ORDER = TASK_STATES.slice(0, TASK_STATES.indexOf('DONE') + 1);
/** States an executable's owners always publish (never quiet, never dropped for a later one). */
const ALWAYS_STORED = ORDER.filter(
  (s) => !isQuiet('executable', s, undefined) && !isSupersedable('executable', s, undefined),
);
const PILOT_LIFE = [...PILOT_STATES.slice(0, PILOT_STATES.indexOf('PMGR_ACTIVE') + 1), 'CANCELED'];
/** UpdateWorker's default maxInFlight: the unacknowledged batches a worker holds at most. */
const MAX_IN_FLIGHT = 8;
/** Tasks per wave: one before the cut, one submitted during it. */
const WAVE = 150;

function skipReason(): string | undefined {
  if (MONGO_URI === undefined || MONGO_URI === '') {
    return 'PILOTFISH_MONGODB_URI is not set; no MongoDB server can be installed here';
  }
  const why = unproxiable(MONGO_URI);
  return why === undefined
    ? undefined
    : `PILOTFISH_MONGODB_URI cannot go through the proxy: ${why}`;
}

/** Sleeps `$2` s, then writes `$1/<task uid>`: a task that ran leaves its mark. */
const MARK = ['/bin/sh', '-c', 'sleep "$2"; : > "$1/$PF_TASK_ID"', 'sh'];

function marking(marks: string, seconds: number): TaskDescription {
  return { executable: MARK[0]!, arguments: [...MARK.slice(1), marks, String(seconds)] };
}

/** A marking task that waits for the gate to open (for a shared lock of `gate`). */
function gated(gate: string, marks: string): TaskDescription {
  return { executable: '/usr/bin/flock', arguments: ['-s', gate, ...MARK, marks, '0'] };
}

/** Resolves once `dir` holds `count` entries (fs.watch events, with a deadline). */
async function entries(dir: string, count: number, ms: number, what: string): Promise<void> {
  const all = new Promise<void>((resolve) => {
    const w = fs.watch(dir, () => {
      if (fs.readdirSync(dir).length >= count) {
        w.close();
        resolve();
      }
    });
    if (fs.readdirSync(dir).length >= count) {
      w.close();
      resolve();
    }
  });
  await withTimeout(all, ms, what).catch((e: unknown) => {
    throw new Error(`${(e as Error).message}: ${fs.readdirSync(dir).length} of ${count} marks`);
  });
}

function told(e: StoreCondition | undefined): string {
  if (e === undefined) return 'reachable again';
  return e instanceof StoreUnreachableError ? `${e.code} at ${e.hosts.join(',')}` : e.code;
}

/** A session's store conditions as they come (with when), and waits for the next of a kind. */
function storeEvents(session: Session): {
  seen: { at: number; e: StoreCondition | undefined }[];
  unreachable(ms: number): Promise<StoreUnreachableError>;
  reachable(ms: number): Promise<void>;
} {
  const seen: { at: number; e: StoreCondition | undefined }[] = [];
  const waiters: { error: boolean; resolve: (e: StoreCondition | undefined) => void }[] = [];
  session.onStoreError((e) => {
    seen.push({ at: Date.now(), e });
    for (const w of waiters.splice(0)) {
      if (w.error === (e !== undefined)) w.resolve(e);
      else waiters.push(w);
    }
  });
  const next = (error: boolean, ms: number, what: string): Promise<StoreCondition | undefined> => {
    if ((session.storeError !== undefined) === error) return Promise.resolve(session.storeError);
    const w = deferred<StoreCondition | undefined>();
    waiters.push({ error, resolve: (e) => w.resolve(e) });
    return withTimeout(w.promise, ms, what);
  };
  return {
    seen,
    unreachable: async (ms) => {
      const e = await next(true, ms, 'Session.onStoreError telling the store unreachable');
      if (!(e instanceof StoreUnreachableError)) throw new Error(`the session told ${told(e)}`);
      return e;
    },
    reachable: async (ms) => {
      await next(false, ms, 'Session.onStoreError telling the store reachable again');
    },
  };
}

/**
 * Per UpdateWorker (its batch ids less their number), the batches it logged as failed or
 * late between `from` and `to` (client.log, agent.log). While no server answers none can be
 * acknowledged, so all those of the outage were unacknowledged at once at its end.
 */
function batchesHeld(logs: string[], from: number, to: number): Map<string, Set<string>> {
  const held = new Map<string, Set<string>>();
  for (const file of logs) {
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
      if (!line.includes('"batch"')) continue;
      let rec: { message?: string; batch?: string; timestamp?: string };
      try {
        rec = JSON.parse(line) as typeof rec;
      } catch {
        continue; // not a whole line
      }
      if (
        rec.message !== 'store could not append batch, will re-send' &&
        rec.message !== 'store ack timed out, re-sending batch'
      ) {
        continue;
      }
      const at = Date.parse(rec.timestamp ?? '');
      if (rec.batch === undefined || !(at >= from && at <= to)) continue;
      const worker = rec.batch.slice(0, rec.batch.lastIndexOf('.'));
      held.set(worker, (held.get(worker) ?? new Set()).add(rec.batch));
    }
  }
  return held;
}

d(skipped === undefined ? TITLE : `${TITLE} (skipped: ${skipped})`, () => {
  const uri = MONGO_URI!;
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) {
      try {
        await c();
      } catch (e) {
        // a driver's message names hosts, never the URI's credentials
        process.stderr.write(`mongodb-outage cleanup: ${(e as Error).message}\n`);
      }
    }
  }, 120_000);

  /**
   * A session whose store is the server behind a fresh proxy, a local pilot of 2 cores
   * (active), every callback recorded, and a closed gate; all undone after the test.
   */
  async function proxiedSession() {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-mongo-outage-'));
    cleanups.push(() => fs.rmSync(root, { recursive: true, force: true }));
    cleanups.push(() => removeMongoSessions(uri, root));
    const proxy = await TcpProxy.start(serverOf(uri));
    cleanups.push(() => proxy.close());
    cleanups.push(() => killAgents(root)); // a test that failed midway
    const session = await Session.open({ dir: root, store: proxiedUri(uri, proxy.address) });
    let closed = false;
    cleanups.push(async () => {
      if (closed) return;
      proxy.restore();
      await session.close().catch(() => undefined);
    });
    const events = storeEvents(session);
    const calls = new Map<string, { state: TaskState; attempt: number; inferred: boolean }[]>();
    const pilotCalls: string[] = [];
    const pmgr = new PilotManager(session, { shutdownGraceMs: 15_000 });
    const tmgr = new TaskManager(session);
    pmgr.onState((_p, s) => pilotCalls.push(s));
    tmgr.onState((t, state, info) => {
      calls.set(t.uid, [
        ...(calls.get(t.uid) ?? []),
        { state, attempt: info.attempt, inferred: info.inferred },
      ]);
    });
    const [pilot] = await pmgr.submitPilots([{ resource: 'local', cores: 2, runtimeMin: 10 }]);
    tmgr.addPilots([pilot!]);
    await pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 30_000 });
    const marks = path.join(root, 'marks');
    fs.mkdirSync(marks);
    const gatePath = path.join(root, 'gate');
    const gate = await closedGate(gatePath);
    cleanups.push(() => gate.remove());
    return {
      root,
      proxy,
      session,
      events,
      calls,
      pilotCalls,
      tmgr,
      pilot: pilot!,
      marks,
      gate,
      gatePath,
      db: parseMongoUri(uri).db,
      close: () => {
        closed = true;
        return session.close();
      },
    };
  }

  it('tells the outage, runs tasks through it, and stores every state once when the server is back', async () => {
    const fx = await proxiedSession();
    const { proxy, session, events, calls, tmgr, marks, gate } = fx;

    // one task holds a core until the gate opens: started before the cut, it ends during it
    const [held] = await tmgr.submitTasks([gated(fx.gatePath, marks)]);
    await tmgr.waitTasks({ uids: [held!.uid], states: ['AGENT_EXECUTING'], timeoutMs: 30_000 });
    // the other core runs a wave; the server goes while its states stream in
    const someDone = deferred<void>();
    let done = 0;
    tmgr.onState((t, s) => {
      if (s === 'DONE' && t.uid !== held!.uid && ++done === WAVE / 3) someDone.resolve();
    });
    const first = await tmgr.submitTasks(Array.from({ length: WAVE }, () => marking(marks, 0.01)));
    await withTimeout(someDone.promise, 60_000, `${WAVE / 3} tasks of the first wave DONE`);
    const cutAt = Date.now();
    proxy.cut();

    const outage = await events.unreachable(30_000);
    expect(outage).toMatchObject({ code: 'E_STORE_UNREACHABLE', hosts: [proxy.address] });
    expect(outage.message).toContain(`cannot reach MongoDB at ${proxy.address}: `);
    // nothing is refused meanwhile, and tasks run on: a second wave is taken, the held task
    // ends, and every task leaves its mark while the server is still cut
    const second = await tmgr.submitTasks(Array.from({ length: WAVE }, () => marking(marks, 0.05)));
    await gate.open();
    await entries(marks, 1 + 2 * WAVE, 60_000, 'every task run while the server is cut');
    expect(proxy.cutNow).toBe(true);
    expect(told(session.storeError)).toBe(`E_STORE_UNREACHABLE at ${proxy.address}`);
    expect(proxy.refused).toBeGreaterThan(0); // the drivers kept knocking

    const restoreAt = Date.now();
    proxy.restore();
    await events.reachable(60_000);
    expect(session.storeError).toBeUndefined();
    const tasks: Task[] = [held!, ...first, ...second];
    const waited = await tmgr.waitTasks({ timeoutMs: 120_000 }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    const agents = agentPids(fx.root);
    await withTimeout(fx.close(), 60_000, 'session close');
    for (const pid of agents) await waitForExit(pid, 15_000);

    // in MongoDB: every state each task's owners publish, each once (the pilot's too)
    const stored = await storedKeys(uri, fx.db, session.uid);
    expect([...stored].filter(([, n]) => n !== 1)).toEqual([]);
    const lost = tasks.flatMap((t) =>
      ALWAYS_STORED.filter((s) => !stored.has(`task ${t.uid} 1 ${s}`)).map((s) => `${t.uid} ${s}`),
    );
    expect(lost).toEqual([]);
    // each task ended DONE, and its callbacks were each state once, in model order
    expect(waited).toBeUndefined();
    for (const t of tasks) {
      expect([t.uid, t.state, t.exitCode]).toEqual([t.uid, 'DONE', 0]);
      const got = calls.get(t.uid) ?? [];
      expect(got.map((c) => c.state)).toEqual(ORDER);
      expect(got.every((c) => c.attempt === 1)).toBe(true);
    }
    expect(fx.pilotCalls).toEqual(PILOT_LIFE);
    for (const s of PILOT_LIFE) expect(stored.get(`pilot ${fx.pilot.uid} 1 ${s}`)).toBe(1);

    // told once when it began (naming the proxy, the only server the session knows), and
    // once it ended; never anything else
    expect(told(events.seen.find((x) => x.at >= cutAt)?.e)).toBe(
      `E_STORE_UNREACHABLE at ${proxy.address}`,
    );
    expect(events.seen.filter((x) => x.at < cutAt)).toEqual([]);
    expect(events.seen.at(-1)?.e).toBeUndefined();
    const kinds = new Set(events.seen.map((x) => told(x.e)));
    expect([...kinds].sort()).toEqual([
      `E_STORE_UNREACHABLE at ${proxy.address}`,
      'reachable again',
    ]);

    // the UpdateWorkers (the client's and the agent's) held at most maxInFlight batches each;
    // what came beyond waited in their buffers (back-pressure on notifications only)
    const logs = [path.join(session.dir, 'client.log'), path.join(fx.pilot.sandbox, 'agent.log')];
    const over = [...batchesHeld(logs, cutAt, restoreAt)]
      .filter(([, batches]) => batches.size > MAX_IN_FLIGHT)
      .map(([worker, batches]) => `${worker}: ${batches.size} batches unacknowledged at once`);
    expect(over).toEqual([]);
  }, 300_000);

  it('closes within a bound while the server is still cut', async () => {
    const fx = await proxiedSession();
    const { proxy, events, calls, tmgr, marks } = fx;
    const [held] = await tmgr.submitTasks([gated(fx.gatePath, marks)]);
    await tmgr.waitTasks({ uids: [held!.uid], states: ['AGENT_EXECUTING'], timeoutMs: 30_000 });
    proxy.cut();
    await events.unreachable(30_000);
    // tasks end meanwhile: the workers hold their states when the close comes
    const wave = await tmgr.submitTasks(Array.from({ length: 40 }, () => marking(marks, 0.01)));
    await entries(marks, 40, 60_000, 'the tasks run while the server is cut');

    const agents = agentPids(fx.root);
    const started = Date.now();
    const outcome = await withTimeout(
      fx.close().then(
        () => undefined,
        (e: unknown) => e as { code?: string },
      ),
      120_000,
      'session.close() while no MongoDB server answers',
    );
    // it finishes (giving up what it could not write), within about three store waits
    expect(outcome === undefined || outcome.code?.startsWith('E_STORE') === true).toBe(true);
    expect(Date.now() - started).toBeLessThan(60_000);
    for (const pid of agents) await waitForExit(pid, 15_000);
    expect(proxy.cutNow).toBe(true);

    // what reached the server is there once; callbacks went as far as the store got, in order
    const stored = await storedKeys(uri, fx.db, fx.session.uid);
    expect([...stored].filter(([, n]) => n !== 1)).toEqual([]);
    for (const t of [held!, ...wave]) {
      const ranks = (calls.get(t.uid) ?? []).map((c) => TASK_STATES.indexOf(c.state));
      expect(ranks.every((r, i) => i === 0 || r > ranks[i - 1]!)).toBe(true);
    }
  }, 300_000);

  const CUTS: [string, CutPoint][] = [
    ['between reserving its slots and inserting', { after: 'reply', command: 'findAndModify' }],
    [
      'after its insert reached the server, before the reply',
      { after: 'request', command: 'insert' },
    ],
  ];

  it.each(CUTS)(
    'MongoStore.append with the server gone %s: each notification stored once, the outage told',
    async (_, point) => {
      const session = `outage-${randomUUID()}`;
      cleanups.push(() => removeMongoSession(uri, TEST_DB, session));
      const proxy = await TcpProxy.start(serverOf(uri));
      cleanups.push(() => proxy.close());
      const store = await MongoStore.open(proxiedUri(uri, proxy.address), session, {
        db: TEST_DB,
      });
      cleanups.push(() => {
        proxy.restore();
        return store.close();
      });
      const events: (StoreUnreachableError | undefined)[] = [];
      const unreachable = deferred<void>();
      store.onUnreachable((e) => {
        events.push(e);
        if (e !== undefined) unreachable.resolve();
      });

      const notes = makeNotes(6, `outage-${point.command}`);
      const cut = proxy.cutAfter(point);
      const appended = store.append(notes).then(
        (accepted) => ({ accepted }),
        (e: unknown) => ({ error: e as Error }),
      );
      await withTimeout(cut, 10_000, `the proxy cut after the ${point.after} of ${point.command}`);
      // either the append ends (resolved only once its notifications are durable) or the store
      // tells that no server answers, whichever first; then the server comes back
      await withTimeout(
        Promise.race([appended, unreachable.promise]),
        30_000,
        'the append to end or the store to tell its server unreachable',
      );
      const whileCut = events.map(told);
      proxy.restore();
      let outcome = await withTimeout(appended, 30_000, 'the append, the server back');
      // a rejected batch is sent again until it is taken, as its UpdateWorker does (the driver
      // may need a heartbeat to see the server back)
      for (let again = 0; 'error' in outcome && again < 5; again++) {
        outcome = await store.append(notes).then(
          (accepted) => ({ accepted }),
          (e: unknown) => ({ error: e as Error }),
        );
      }
      expect('error' in outcome ? outcome.error.message : 'taken').toBe('taken');

      const stored = await storedKeys(uri, TEST_DB, session);
      expect({ stored: [...stored.keys()].sort(), copies: [...stored.values()] }).toEqual({
        stored: notes.map((n) => `${n.kind} ${n.uid} ${n.attempt} ${n.state}`).sort(),
        copies: notes.map(() => 1),
      });
      expect(whileCut).toEqual([`E_STORE_UNREACHABLE at ${proxy.address}`]);
      expect(told(events.at(-1))).toBe('reachable again');
    },
    120_000,
  );
});

/** An OP_MSG: the body document (kind 0), after a document sequence (kind 1) if given. */
function opMsg(
  ids: { requestId: number; responseTo?: number },
  body: Record<string, unknown>,
  sequence?: { id: string; docs: Record<string, unknown>[] },
): Buffer {
  const sections: Buffer[] = [];
  if (sequence !== undefined) {
    const docs = sequence.docs.map((x) => Buffer.from(BSON.serialize(x)));
    const id = Buffer.from(`${sequence.id}\0`);
    const size = Buffer.alloc(4);
    size.writeInt32LE(4 + id.length + docs.reduce((n, x) => n + x.length, 0));
    sections.push(Buffer.from([1]), size, id, ...docs);
  }
  sections.push(Buffer.from([0]), Buffer.from(BSON.serialize(body)));
  const head = Buffer.alloc(20);
  head.writeInt32LE(20 + sections.reduce((n, x) => n + x.length, 0), 0);
  head.writeInt32LE(ids.requestId, 4);
  head.writeInt32LE(ids.responseTo ?? 0, 8);
  head.writeInt32LE(2013, 12);
  return Buffer.concat([head, ...sections]);
}

/** A socket's events as awaitables: whole wire messages, and its close. */
function peer(socket: net.Socket): {
  messages: Buffer[];
  next(what: string): Promise<Buffer>;
  closed: Promise<void>;
} {
  const messages: Buffer[] = [];
  const frames = new WireFrames();
  let waiting: ((m: Buffer) => void) | undefined;
  socket.on('data', (chunk: Buffer) => {
    for (const m of frames.push(chunk)) {
      messages.push(m);
      waiting?.(m);
    }
  });
  socket.on('error', () => undefined); // a reset: 'close' follows
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  let read = 0;
  return {
    messages,
    closed,
    next: (what) => {
      if (read < messages.length) return Promise.resolve(messages[read++]!);
      return withTimeout(
        new Promise<Buffer>((resolve) => {
          waiting = (m) => {
            waiting = undefined;
            read++;
            resolve(m);
          };
        }),
        5_000,
        what,
      );
    },
  };
}

// Runs without a server: the proxy itself, against real TCP servers on this machine. It also
// keeps this file from being all-skipped, so that Jest lists the suite above with its reason.
describe('the outage tests: their proxy and URIs (no MongoDB server needed)', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  /** A real TCP server on 127.0.0.1, closed after the test. */
  async function server(onSocket: (s: net.Socket) => void): Promise<{ port: number }> {
    const sockets = new Set<net.Socket>();
    const srv = net.createServer((s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
      onSocket(s);
    });
    await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', () => resolve()));
    cleanups.push(async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => srv.close(() => resolve()));
    });
    return { port: (srv.address() as net.AddressInfo).port };
  }

  async function proxyTo(port: number): Promise<TcpProxy> {
    const proxy = await TcpProxy.start({ host: '127.0.0.1', port });
    cleanups.push(() => proxy.close());
    return proxy;
  }

  function connect(proxy: TcpProxy): net.Socket {
    const s = net.connect({ host: '127.0.0.1', port: proxy.port });
    cleanups.push(() => void s.destroy());
    return s;
  }

  /** What `socket` receives until it closes (or `bytes` have come). */
  function received(socket: net.Socket, bytes = Infinity): Promise<string> {
    let got = '';
    return withTimeout(
      new Promise<string>((resolve) => {
        socket.on('data', (c: Buffer) => {
          got += c.toString();
          if (got.length >= bytes) resolve(got);
        });
        socket.on('error', () => undefined);
        socket.once('close', () => resolve(got));
      }),
      5_000,
      'data or close through the proxy',
    );
  }

  it('forwards both ways, cuts every connection and refuses new ones, and forwards again once restored', async () => {
    const echo = await server((s) => s.pipe(s));
    const proxy = await proxyTo(echo.port);

    const one = connect(proxy);
    const echoed = received(one, 'hello, server'.length);
    one.write('hello, server');
    expect(await echoed).toBe('hello, server');

    const gone = received(one);
    proxy.cut();
    expect(await gone).toBe(''); // closed, nothing more
    const refused = connect(proxy);
    expect(await received(refused)).toBe(''); // accepted and closed at once
    expect([proxy.cutNow, proxy.refused, proxy.accepted]).toEqual([true, 1, 1]);

    proxy.restore();
    const two = connect(proxy);
    const again = received(two, 'back again'.length);
    two.write('back again');
    expect(await again).toBe('back again');

    await proxy.close();
    const after = net.connect({ host: '127.0.0.1', port: proxy.port });
    const code = await withTimeout(
      new Promise<string | undefined>((resolve) =>
        after.once('error', (e: NodeJS.ErrnoException) => resolve(e.code)),
      ),
      5_000,
      'a connection to the closed proxy',
    );
    expect(code).toBe('ECONNREFUSED');
  });

  /** A server answering each OP_MSG with {ok: 1} and the request's id; it notes the commands. */
  async function wireServer(): Promise<{
    port: number;
    commands: string[];
    closed: Promise<void>;
  }> {
    const commands: string[] = [];
    const closed = deferred<void>();
    const { port } = await server((s) => {
      const frames = new WireFrames();
      s.on('data', (chunk: Buffer) => {
        for (const m of frames.push(chunk)) {
          const { requestId, command } = wireMessageOf(m);
          commands.push(command ?? '?');
          s.write(opMsg({ requestId: 1_000 + requestId, responseTo: requestId }, { ok: 1 }));
        }
      });
      s.once('close', () => closed.resolve());
    });
    return { port, commands, closed: closed.promise };
  }

  it('cutAfter a reply: the client gets that reply whole, and nothing it sends next gets through', async () => {
    const srv = await wireServer();
    const proxy = await proxyTo(srv.port);
    const client = connect(proxy);
    const c = peer(client);
    client.write(opMsg({ requestId: 1 }, { ping: 1, $db: 'admin' }));
    expect(wireMessageOf(await c.next('the ping reply')).responseTo).toBe(1);

    const cut = proxy.cutAfter({ after: 'reply', command: 'findAndModify' });
    client.write(
      opMsg({ requestId: 2 }, { findAndModify: 'counters', update: { $inc: { seq: 3 } } }),
    );
    expect(wireMessageOf(await c.next('the findAndModify reply')).responseTo).toBe(2);
    await withTimeout(cut, 5_000, 'the cut');
    client.write(opMsg({ requestId: 3 }, { insert: 'notifications' }));
    await withTimeout(c.closed, 5_000, 'the client connection closed');
    await withTimeout(srv.closed, 5_000, 'the server connection closed');
    expect(c.messages.map((m) => wireMessageOf(m).responseTo)).toEqual([1, 2]);
    expect(srv.commands).toEqual(['ping', 'findAndModify']);
    expect(proxy.cutNow).toBe(true);
  });

  it('makes a URI the driver takes: a store opened through a proxy with no server behind it is unreachable at its address within 2 s', async () => {
    const free = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const proxy = await proxyTo(free);
    const given = `mongodb://pf:secret@127.0.0.1:${free}/pf_db?replicaSet=rs0&serverselectiontimeoutms=30000`;
    const uri = proxiedUri(given, proxy.address);
    expect(parseMongoUri(uri)).toMatchObject({ hosts: [proxy.address], db: 'pf_db' });
    expect(uri).toContain('pf:secret@'); // the credentials go with it
    expect(uri).toMatch(/[?&]directConnection=true(&|$)/);
    expect(uri.match(/serverselectiontimeoutms=\d+/gi)).toEqual(['serverSelectionTimeoutMS=2000']);

    const started = Date.now();
    const err = await MongoStore.open(uri, 'proxied').then(
      () => undefined,
      (e: unknown) => e as StoreUnreachableError,
    );
    expect(err).toBeInstanceOf(StoreUnreachableError);
    expect(err).toMatchObject({ code: 'E_STORE_UNREACHABLE', hosts: [proxy.address] });
    expect(err!.message).not.toContain('secret');
    expect(Date.now() - started).toBeLessThan(10_000); // its 2 s, not the given 30 s
    expect(proxy.accepted).toBeGreaterThan(0); // the driver came through the proxy
  });

  it('tells which URIs one proxy cannot stand in front of, and where the server is', () => {
    expect(unproxiable('mongodb://127.0.0.1:27017/?replicaSet=rs0')).toBeUndefined();
    expect(unproxiable('mongodb+srv://cluster.example.net/')).toMatch(/mongodb\+srv/);
    expect(unproxiable('mongodb://a:1,b:2/')).toMatch(/names 2 servers/);
    expect(unproxiable('mongodb://a:1/?TLS=true')).toMatch(/TLS/);
    expect(unproxiable('mongodb://a:1/?loadBalanced=true')).toMatch(/load balanced/);
    expect(serverOf('mongodb://u:p@db.example/x')).toEqual({ host: 'db.example', port: 27017 });
    expect(serverOf('mongodb://[::1]:27018')).toEqual({ host: '::1', port: 27018 });
  });

  it('cutAfter a request: the server gets it, and the client hears nothing more', async () => {
    const srv = await wireServer();
    const proxy = await proxyTo(srv.port);
    const client = connect(proxy);
    const c = peer(client);
    client.write(opMsg({ requestId: 1 }, { ping: 1 }));
    await c.next('the ping reply');

    const cut = proxy.cutAfter({ after: 'request', command: 'insert' });
    // the documents in a sequence before the body, as a driver may send them
    client.write(
      opMsg(
        { requestId: 2 },
        { insert: 'notifications', ordered: false },
        {
          id: 'documents',
          docs: [{ seq: 1 }, { seq: 2 }],
        },
      ),
    );
    await withTimeout(cut, 5_000, 'the cut');
    await withTimeout(c.closed, 5_000, 'the client connection closed');
    await withTimeout(srv.closed, 5_000, 'the server connection closed');
    expect(srv.commands).toEqual(['ping', 'insert']);
    expect(c.messages.map((m) => wireMessageOf(m).responseTo)).toEqual([1]);
    const refused = connect(proxy);
    await withTimeout(peer(refused).closed, 5_000, 'a new connection refused');
    expect(proxy.refused).toBe(1);
  });
});
