/**
 * What a session's `store: 'mongodb://…'` names, read without connecting: the servers (for
 * errors and logs), the database, and the URI with its credentials hidden.
 */
import { MongoClient } from 'mongodb';
import { ConnectionString } from 'mongodb-connection-string-url';
import { UsageError } from '../../errors';

/** The database a URI without a path uses. */
export const DEFAULT_DB = 'pilotfish';

/**
 * How long opening a store waits for a server to answer when the URI does not say
 * (`serverSelectionTimeoutMS`): the driver's own default, 30 s, is long for a session that
 * cannot start without it.
 */
export const DEFAULT_SELECTION_TIMEOUT_MS = 10_000;

export interface MongoTarget {
  /** The URI as given: it may hold credentials, so it is never logged. */
  uri: string;
  /** host:port of each server (an SRV URI: its one name). */
  hosts: string[];
  /** The database: the URI's path, else DEFAULT_DB. */
  db: string;
  /** The URI with its user and password replaced, for logs and errors. */
  redacted: string;
  /** Whether the URI sets serverSelectionTimeoutMS itself. */
  selectionTimeoutSet: boolean;
}

/** Whether a session's `store` option names MongoDB (rather than 'embedded'). */
export function isMongoUri(store: string | undefined): boolean {
  return store !== undefined && /^mongodb(\+srv)?:\/\//.test(store);
}

/** Reads a MongoDB URI; a malformed one is a UsageError that says why (never its password). */
export function parseMongoUri(uri: string): MongoTarget {
  let cs: ConnectionString;
  try {
    cs = new ConnectionString(uri);
  } catch (e) {
    throw new UsageError(
      `store: not a MongoDB URI (${(e as Error).message}); expected mongodb://[user:password@]host[:port][,host…]/[database][?options]`,
    );
  }
  const path = cs.pathname.replace(/^\//, '');
  const db = path === '' ? DEFAULT_DB : decodedDb(path);
  if (/[/\\. "$]/.test(db) || db.length > 63) {
    throw new UsageError(
      `store: '${db}' is not a MongoDB database name (at most 63 characters, none of / \\ . " $ or space)`,
    );
  }
  const redacted = cs.redact().toString();
  driverAccepts(uri, redacted, cs.password);
  // URI option names are case-insensitive to the driver
  const keys = [...cs.searchParams.keys()].map((k) => k.toLowerCase());
  return {
    uri,
    hosts: [...cs.hosts],
    db,
    redacted,
    selectionTimeoutSet: keys.includes('serverselectiontimeoutms'),
  };
}

/**
 * The driver parses a URI further than ConnectionString does (ports, options and their
 * values): what it refuses is a usage error here, not a crash at open. Constructing a client
 * reads the URI only; nothing connects, resolves or starts a timer before connect().
 */
function driverAccepts(uri: string, redacted: string, password: string): void {
  try {
    new MongoClient(uri);
  } catch (e) {
    // the driver's messages name hosts and options, not the password: kept so, whatever comes
    let message = `store: the MongoDB driver refuses ${redacted}: ${(e as Error).message}`;
    for (const p of password === '' ? [] : [password, safeDecode(password)]) {
      message = message.split(p).join('***');
    }
    throw new UsageError(message);
  }
}

/** The database a URI's path names, %-escapes decoded. */
function decodedDb(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    throw new UsageError(`store: the database '${path}' holds a % not followed by two hex digits`);
  }
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * A driver client for a parsed URI (not connected yet), waiting `timeoutMs` for a server
 * unless the URI says; `waitedMs` is that wait where it is ours, for the error that names it.
 */
export function clientFor(
  target: MongoTarget,
  timeoutMs = DEFAULT_SELECTION_TIMEOUT_MS,
): { client: MongoClient; waitedMs: number | undefined } {
  const client = new MongoClient(target.uri, {
    appName: 'pilotfish',
    ...(target.selectionTimeoutSet ? {} : { serverSelectionTimeoutMS: timeoutMs }),
  });
  return { client, waitedMs: target.selectionTimeoutSet ? undefined : timeoutMs };
}
