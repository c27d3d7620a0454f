import type { Logger } from '../../lib/logger';
import type { Notification } from '../../states/notification';
import { makePrivateDir } from '../../lib/private-files';
import { MirrorAheadError, SessionMirror, type MirroredKey } from '../../updater/mongodb/mirror';
import type { MongoStore } from '../../updater/mongodb/store';
import type { StateStore } from '../../updater/state-store';
import { UsageError } from '../../errors';
import { DeliveredCounters } from './delivered';
import { Journal, type JournalEntry } from './journal';
import { readSessionKey, writeSessionKey } from '../pilots/session-security';

/** How long close waits for the journal's last entries to reach the database. */
const CLOSE_WAIT_MS = 5_000;

/**
 * A MongoDB session keeps what its directory holds for a resume (journal, key, delivered
 * counters) in its database too, so that a client on a machine without the directory can
 * resume it (rebuildFromDatabase). The journal stays the first copy: an entry is mirrored
 * after it is written to the file.
 */
export class ClientMirror {
  private constructor(
    private readonly mirror: SessionMirror,
    private readonly log: Logger,
  ) {}

  /**
   * Starts mirroring a session's journal and counters (`resumed`: the journal's entries of a
   * resumed session, whose missing tail the database gets now).
   */
  static async start(
    store: MongoStore,
    s: { dir: string; journal: Journal; delivered: DeliveredCounters; log: Logger },
    resumed: readonly JournalEntry[] | undefined,
  ): Promise<ClientMirror> {
    const key: MirroredKey | undefined = readSessionKey(s.dir);
    let mirror: SessionMirror;
    try {
      mirror =
        resumed === undefined
          ? await SessionMirror.create(store, key)
          : await SessionMirror.resume(store, resumed, key);
    } catch (e) {
      if (!(e instanceof MirrorAheadError)) throw e;
      throw new UsageError(
        `cannot resume: ${e.message}; remove ${s.dir} to resume from the database`,
      );
    }
    s.journal.mirrorTo((entries) => mirror.append(entries));
    s.delivered.mirrorTo((counts) => mirror.delivered(counts));
    return new ClientMirror(mirror, s.log);
  }

  /**
   * `store` for this process's own UpdateWorkers: a batch is appended once every journal
   * entry written before it is in the database, so no task has a state there without its
   * description (agents hear of a task only after the client's first states of it).
   */
  gate(store: StateStore): StateStore {
    const mirror = this.mirror;
    return {
      append: (batch) => mirror.settled().then(() => store.append(batch)),
      watch: (from) => store.watch(from),
      history: (uid) => store.history(uid),
      close: () => store.close(),
    };
  }

  /** Writes what is left, within CLOSE_WAIT_MS; says what it could not. */
  async close(): Promise<void> {
    const behind = await this.mirror.close(CLOSE_WAIT_MS);
    if (behind > 0) {
      this.log.warn('journal entries not written to the database', {
        entries: behind,
        why: 'no server answered: a resume from the database alone would not know of them',
      });
    }
  }
}

/**
 * Makes the directory of a MongoDB session that this machine does not have from what its
 * database holds: the journal, the key and the delivered counters. False when the database
 * holds nothing of the session.
 */
export async function rebuildFromDatabase(store: MongoStore, dir: string): Promise<boolean> {
  const held = await SessionMirror.read(store);
  if (held === undefined || held.entries.length === 0) return false;
  makePrivateDir(dir);
  Journal.rebuild(dir, held.entries as JournalEntry[]);
  DeliveredCounters.rebuild(dir, held.delivered);
  if (held.key !== undefined) writeSessionKey(dir, held.key);
  return true;
}

/**
 * Hears a resumed MongoDB session's replay for states of tasks no manager knows: tasks whose
 * description had not reached the database when the client died, where the directory that
 * held it is gone too. Nothing can run them again; the returned call says how many there were.
 */
export function unknownTasks(
  onNotifications: (l: (ns: readonly Notification[]) => void) => () => void,
  known: (uid: string) => boolean,
  log: Logger,
): () => void {
  const unknown = new Set<string>();
  const stop = onNotifications((ns) => {
    for (const n of ns) if (n.kind === 'task' && !known(n.uid)) unknown.add(n.uid);
  });
  return () => {
    stop();
    if (unknown.size === 0) return;
    log.error('tasks with states in the database and no description: they are not followed', {
      count: unknown.size,
      tasks: [...unknown].slice(0, 20),
      why: 'submitted just before the client died, and their description had not reached the database',
    });
  };
}
