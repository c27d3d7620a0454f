import { errorMeta } from '../errors';
import { readProfile } from '../profile/read';
import type { Profile } from '../profile/types';
import type { StoreCondition } from '../updater/state-store';
import type { ControlContext } from './control/context';
import { managersOf } from './control/managers';
import { ControlServer } from './control/server';
import { ClientRuntime, bindRuntime, runtimeOf } from './runtime/runtime';
import type { SessionOptions } from './session-options';

export type { SessionOptions } from './session-options';

/**
 * What a Session keeps out of its public type, as its runtime is: what its control handlers use
 * (`context`), the control socket (`<dir>/control.sock`, for `pilotfish status|cancel|explain`;
 * undefined: it could not listen) and its close under way.
 */
interface Hidden {
  context: ControlContext;
  control?: ControlServer;
  closing?: Promise<void>;
}
const hidden = new WeakMap<Session, Hidden>();

/**
 * A pilotfish session: its directory holds the state store, the journal and the logs; its
 * pilots and tasks are submitted through PilotManager and TaskManager. Closing it ends every
 * pilot it still has and releases every socket.
 */
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
    const h: Hidden = {
      context: {
        runtime,
        managers: managersOf(runtime),
        closing: () => h.closing !== undefined,
      },
    };
    hidden.set(session, h);
    const control = await ControlServer.listen(h.context);
    if (control !== undefined) h.control = control;
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
    const h = hiddenOf(this);
    if (h.closing !== undefined) return h.closing.catch(() => undefined); // told once
    // from now on the control handlers say `closing` and refuse `cancel`
    h.closing = end(runtimeOf(this), h.control);
    return h.closing;
  }
}

/**
 * What the session's control handlers use (control/handlers.ts): for a server on a transport
 * other than its Unix socket (an HTTP API), which calls the same table through dispatchControl.
 */
export function controlContextOf(session: Session): ControlContext {
  return hiddenOf(session).context;
}

function hiddenOf(session: Session): Hidden {
  const h = hidden.get(session);
  if (h === undefined) throw new Error('expected a Session from Session.open()');
  return h;
}

async function end(rt: ClientRuntime, control: ControlServer | undefined): Promise<void> {
  // answers `status` while it closes; gone, and the close in the journal, once closed
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
