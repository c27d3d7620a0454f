import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { UsageError } from '../../errors';
import type { SessionOptionsInput } from '../../generated';
import { newSessionId } from '../../lib/ids';
import type { Logger } from '../../lib/logger';
import { makePrivateDir } from '../../lib/private-files';
import { MongoStore } from '../../updater/mongodb/store';
import {
  readStoreChoice,
  storeChoiceOf,
  writeStoreChoice,
  type StoreChoice,
} from '../../updater/store-choice';
import { refuseIfLive } from '../control/liveness';
import { Journal, type JournalEntry } from '../resume/journal';
import { rebuildFromDatabase } from '../resume/mirror';

/** Where a session opens: its uid, directory, journal and store. */
export interface SessionPlace {
  uid: string;
  dir: string;
  journal: Journal;
  /** The journal's entries of a session being resumed (undefined: a new session). */
  resumed: JournalEntry[] | undefined;
  choice: StoreChoice;
  /** The session's MongoDB store, already reached, where it has one. */
  mongo: MongoStore | undefined;
}

/**
 * Finds or makes a session's directory, journal and store. A MongoDB store is reached before
 * anything is written, so that a session that cannot have its store leaves nothing behind.
 */
export async function sessionPlace(
  opts: SessionOptionsInput,
  logger: Logger | undefined,
): Promise<SessionPlace> {
  const uid = opts.resume ?? opts.uid ?? newSessionId();
  const dir = path.resolve(opts.dir ?? path.join(process.cwd(), '.pilotfish'), uid);
  let journal: Journal | undefined;
  let resumed: JournalEntry[] | undefined;
  let choice: StoreChoice;
  let mongo: MongoStore | undefined;
  try {
    if (opts.resume !== undefined) {
      if (!existsSync(dir)) mongo = await fromDatabase(dir, uid, opts.store, logger);
      choice = resumedStore(dir, opts.store);
      await refuseIfLive(dir);
      ({ journal, entries: resumed } = Journal.read(dir));
    } else {
      choice = storeChoiceOf(opts.store);
    }
    if (choice.kind === 'mongodb') mongo ??= await openMongo(choice, uid, logger);
    if (journal === undefined) {
      makePrivateDir(dir);
      journal = Journal.create(dir);
      writeStoreChoice(dir, choice);
    } else if (choice.kind === 'mongodb') writeStoreChoice(dir, choice, { replace: true });
  } catch (e) {
    await mongo?.close(); // its client would keep the process alive
    throw e;
  }
  return { uid, dir, journal, resumed, choice, mongo };
}

function openMongo(
  choice: Extract<StoreChoice, { kind: 'mongodb' }>,
  uid: string,
  logger: Logger | undefined,
): Promise<MongoStore> {
  return MongoStore.open(choice.uri, uid, {
    db: choice.db,
    ...(logger !== undefined ? { logger } : {}),
  });
}

/**
 * A session resumed on a machine without its directory: a MongoDB session's database holds
 * what the directory did (resume/mirror.ts), and the directory is made from it. Returns the
 * store, already reached.
 */
async function fromDatabase(
  dir: string,
  uid: string,
  option: string | undefined,
  logger: Logger | undefined,
): Promise<MongoStore> {
  const choice = option === undefined ? undefined : storeChoiceOf(option);
  if (choice?.kind !== 'mongodb') {
    throw new UsageError(
      `cannot resume: no session directory '${dir}' (a MongoDB session can be resumed without it: give its store's URI)`,
    );
  }
  const mongo = await openMongo(choice, uid, logger);
  try {
    if (!(await rebuildFromDatabase(mongo, dir))) {
      throw new UsageError(
        `cannot resume: no session directory '${dir}', and database '${choice.db}' at ${mongo.target.hosts.join(',')} holds no session ${uid}`,
      );
    }
    writeStoreChoice(dir, choice);
    logger?.info('session directory rebuilt from its database', { dir, db: choice.db });
    return mongo;
  } catch (e) {
    await mongo.close();
    throw e;
  }
}

/**
 * The store of a session being resumed: the one its directory names, or `option` where it
 * names a MongoDB URI for a MongoDB session (its credentials may have changed).
 */
function resumedStore(dir: string, option: string | undefined): StoreChoice {
  const recorded = readStoreChoice(dir);
  if (option === undefined) return recorded;
  const asked = storeChoiceOf(option);
  if (asked.kind !== recorded.kind) {
    const where = (c: StoreChoice): string =>
      c.kind === 'embedded' ? 'in its directory (embedded)' : 'in MongoDB';
    throw new UsageError(
      `cannot resume: session ${path.basename(dir)} keeps its store ${where(recorded)}, not ${where(asked)}`,
    );
  }
  return asked;
}
