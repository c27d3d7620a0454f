/**
 * Which state store a session uses, decided once at open and kept in its directory, so that
 * whatever reads the session later (a resumed client, `pilotfish profile`, `timeline`, `tail`)
 * reads the same store: the embedded one, or a MongoDB database (docs/state-store.md).
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { UsageError } from '../errors';
import type { Logger } from '../lib/logger';
import { PRIVATE_FILE } from '../lib/private-files';
import { EmbeddedStore } from './embedded/store';
import { MongoStore } from './mongodb/store';
import { isMongoUri, parseMongoUri } from './mongodb/uri';

export type StoreChoice = { kind: 'embedded' } | { kind: 'mongodb'; uri: string; db: string };

/** A session's store, opened by its client: the embedded one or MongoDB. */
export type SessionStore = EmbeddedStore | MongoStore;

/**
 * `<session dir>/store.json`, mode 0600, for a MongoDB session only: the URI (it may hold a
 * password, as the agents' bootstrap files do) and the database. No file: embedded.
 */
export const STORE_FILE = 'store.json';

/** The choice a `store` option makes: 'embedded' (or none) or a MongoDB URI. */
export function storeChoiceOf(option: string | undefined): StoreChoice {
  if (option === undefined || option === 'embedded') return { kind: 'embedded' };
  if (!isMongoUri(option)) {
    // a mistyped scheme ('mongo://user:password@…') is quoted up to its '://' only
    const shown = option.includes('://') ? `${option.slice(0, option.indexOf('://'))}://…` : option;
    throw new UsageError(`store: expected 'embedded' or a mongodb:// URI, got '${shown}'`);
  }
  return { kind: 'mongodb', uri: option, db: parseMongoUri(option).db };
}

/** Records a MongoDB session's store in its directory (nothing for an embedded one). */
export function writeStoreChoice(
  dir: string,
  choice: StoreChoice,
  opts: { replace?: boolean } = {},
): void {
  if (choice.kind !== 'mongodb') return;
  const file = path.join(dir, STORE_FILE);
  writeFileSync(file, JSON.stringify({ mongodb: choice.uri, db: choice.db }) + '\n', {
    mode: PRIVATE_FILE,
    flag: opts.replace === true ? 'w' : 'wx',
  });
  // a mode applies to a file created only: one loosened since is made its owner's again
  chmodSync(file, PRIVATE_FILE);
}

/** The store a session directory names; a damaged store.json is a UsageError naming it. */
export function readStoreChoice(dir: string): StoreChoice {
  const file = path.join(dir, STORE_FILE);
  if (!existsSync(file)) return { kind: 'embedded' };
  const expected = 'expected {"mongodb": "mongodb://…", "db": "…"}';
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    // not JSON.parse's message: it quotes the text, which may hold the URI's password
    throw new UsageError(`${file}: not JSON; ${expected}`);
  }
  const { mongodb, db } = (parsed ?? {}) as { mongodb?: unknown; db?: unknown };
  if (typeof mongodb !== 'string' || !isMongoUri(mongodb) || typeof db !== 'string') {
    throw new UsageError(`${file}: ${expected}`);
  }
  return { kind: 'mongodb', uri: mongodb, db };
}

/** Opens the store a choice names for `session` (whose directory is `dir`). */
export function openStore(
  choice: StoreChoice,
  dir: string,
  session: string,
  log: Logger,
): Promise<SessionStore> {
  if (choice.kind === 'embedded') return EmbeddedStore.open(dir);
  return MongoStore.open(choice.uri, session, { db: choice.db, logger: log });
}

/** A mark of what the store holds now (StoreFollower.drained waits for its watch to reach it). */
export function markOf(store: SessionStore): number | Promise<number> {
  return store instanceof EmbeddedStore ? store.size : store.mark();
}
