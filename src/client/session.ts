import { errorMeta } from '../errors';
import type { Logger } from '../lib/logger';
import { readProfile } from '../profile/read';
import type { Profile } from '../profile/types';
import type { StoreCondition } from '../updater/state-store';
import { ControlServer } from './control-server';
import { ClientRuntime, bindRuntime, runtimeOf } from './runtime';

export interface SessionOptions {
  /**
   * State store: 'embedded' (default) keeps an append-only file in the session directory; a
   * MongoDB URI (`mongodb://[user:password@]host[:port][,…]/[database][?options]`, database
   * `pilotfish` by default) keeps the session's notifications in that database, written there
   * by the agents' UpdateWorkers directly (docs/state-store.md says when to choose it and what
   * the agents' nodes must reach). Open fails with a StoreUnreachableError naming the hosts
   * when no server answers within `serverSelectionTimeoutMS` (10 s unless the URI says).
   * A resumed session uses the store it was opened with, unless this names another URI.
   */
  store?: string;
  /** Parent directory of session directories (default: ./.pilotfish in the working dir). */
  dir?: string;
  /** The new session's uid and directory name (default: pf.YYYYMMDD.HHMMSS.xxxxxx, UTC). */
  uid?: string;
  /**
   * Uid of a session in `dir` whose client died: its store and journal are reopened, its
   * addresses bound again (its agents reconnect on their own), its pilots and tasks adopted by
   * managers created in the same order as before, and callbacks already delivered are not
   * delivered again. Callbacks start with `replay()` (or the first wait), once they are set.
   * A session whose client still runs (it answers on its control socket) is refused.
   * A MongoDB session whose directory is not in `dir` (another machine) is resumed from its
   * database, given its URI as `store`: the directory is made again from it.
   */
  resume?: string;
  /** UpdateWorkers of the client side (default 1; agents have their own). */
  updateWorkers?: number;
  /** The lowest level written to client.log in the session directory (default 'info'). */
  logLevel?: 'error' | 'warn' | 'info' | 'debug';
  /**
   * IP address (or interface) the session listens on for its agents (default 127.0.0.1).
   * Batch pilots on other hosts need an address their compute nodes can reach.
   */
  bindHost?: string;
  /**
   * Every port a session listens on is authenticated and encrypted (CurveZMQ; each pilot holds
   * keys of its own). `'trusted-network'` turns that off, for a network where every host and
   * user is trusted: anyone who reaches the ports can then run commands as you.
   */
  insecure?: 'trusted-network';
  /** Also log here (the session always logs to client.log in its directory). */
  logger?: Logger;
}
/**
 * A pilotfish session: its directory holds the state store, the journal and the logs; its
 * pilots and tasks are submitted through PilotManager and TaskManager. Closing it ends every
 * pilot it still has and releases every socket.
 */
/**
 * What a Session keeps out of its public type, as its runtime is: the control socket
 * (`<dir>/control.sock`, for `pilotfish status|cancel|explain`; undefined: it could not listen)
 * and its close under way.
 */
const hidden = new WeakMap<Session, { control?: ControlServer; closing?: Promise<void> }>();

export class Session {
  private constructor(
    /** The session's id (`Session.open({ resume: uid })` takes it back after a crash). */
    readonly uid: string,
    /** The session's directory. */
    readonly dir: string,
  ) {}

  static async open(options: SessionOptions = {}): Promise<Session> {
    const runtime = await ClientRuntime.open(options);
    const session = new Session(runtime.uid, runtime.dir);
    bindRuntime(session, runtime);
    if (options.resume !== undefined) mark(runtime, 'resumed');
    const control = await ControlServer.listen(runtime);
    hidden.set(session, control === undefined ? {} : { control });
    return session;
  }

  /**
   * A resumed session: starts delivering callbacks (rebuilding every state from the store,
   * without repeating what the previous client delivered) and resolves once caught up. The
   * first wait does it too. A no-op for a new session.
   */
  replay(): Promise<void> {
    return runtimeOf(this).replay();
  }

  /**
   * Listens for the session's store becoming unable to write its files (a full disk, a quota,
   * an I/O error: the error names the file and errno) and able again (`undefined`). While it
   * lasts, tasks go on and nothing is lost: their states are held and delivered, in order,
   * once space is back; submitTasks, submitPilots and new waits reject with that error
   * (`code` 'E_STORE_UNWRITABLE'); a wait already under way goes on waiting. Also called, at
   * close, with the error that counts notifications given up (`lost`).
   *
   * A MongoDB session's store that no server answers is reported the same way, as a
   * StoreUnreachableError (`code` 'E_STORE_UNREACHABLE', naming the hosts and the driver's
   * reason), and `undefined` once one answers again. It refuses nothing: tasks go on, their
   * states are held by the UpdateWorkers and written, once each, when a server answers, and
   * callbacks go on from there. Returns the unsubscribe.
   */
  onStoreError(listener: (error: StoreCondition | undefined) => void): () => void {
    return runtimeOf(this).health.onChange(listener);
  }

  /** The store's condition now: the error while it cannot write or reach a server, else undefined. */
  get storeError(): StoreCondition | undefined {
    return runtimeOf(this).health.condition;
  }

  /**
   * The session's profile as its store holds it now: every task attempt with the real time of
   * each state it passed, where it ran (node, cores, GPUs) and when its own command ran; every
   * pilot with its nodes, its states, its job start and drain start. It holds what callbacks
   * have delivered, and works after `close()` too (`readProfile(dir)` reads any session's).
   */
  profile(): Promise<Profile> {
    return readProfile(this.dir);
  }

  /**
   * Shuts down every pilot of the session, flushes the store and releases every socket. Always
   * finishes: a store that still cannot write gives up what it holds, and close then rejects
   * with a StoreUnwritableError whose `lost` counts those notifications (a MongoDB store that
   * no server answered: a StoreUnreachableError with `lost`).
   */
  close(): Promise<void> {
    const h = hidden.get(this) ?? {};
    if (h.closing !== undefined) return h.closing.catch(() => undefined); // told once
    h.closing = end(runtimeOf(this), h.control);
    hidden.set(this, h);
    return h.closing;
  }
}

async function end(rt: ClientRuntime, control: ControlServer | undefined): Promise<void> {
  // answers `status` while it closes; gone, and the close in the journal, once closed
  control?.setClosing();
  try {
    await rt.close();
  } finally {
    // marked first: a command that finds the socket gone finds the session ended
    mark(rt, 'closed');
    await control?.close();
  }
}

/**
 * Marks the session's journal: `pilotfish sessions` tells an ended session (last mark `closed`)
 * from a crashed one. A journal that cannot be written (a full disk) costs the mark, nothing else.
 */
function mark(rt: ClientRuntime, t: 'closed' | 'resumed'): void {
  try {
    rt.journal.append({ t, at: Date.now() });
  } catch (e) {
    rt.log.warn('the journal cannot be marked', { mark: t, ...errorMeta(e) });
  }
}
