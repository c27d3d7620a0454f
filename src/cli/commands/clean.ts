import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { rmSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { coerceError } from '../../errors';
import { MongoSessionDocuments } from '../../updater/mongodb/remove';
import { readStoreChoice } from '../../updater/store-choice';
import { EXIT } from '../args';
import { ask } from '../control-client';
import { DEFAULT_SESSIONS_DIR, listSessionDirs, resolveSessionDir } from '../session-dir';
import { journalLife, liveAgents } from '../session-info';
import { diskUsage, formatBytes, SURVEY_ANSWER_MS } from '../session-survey';
import { usageErrors } from '../usage';

const EXIT_STATUS = `
exit status:
  0  every session meant to go was removed (or, with --dry-run, listed); also when none was
  1  some directory could not be removed, or a MongoDB session's documents could not be (its
     directory, which names them, is then kept; message on stderr), or pilotfish failed
  2  wrong usage (message on stderr)

A live session is never removed, nor (unless --crashed) a crashed one: its client died without
closing it, and Session.open({ resume }) can still take it up. Even with --crashed, a session
whose local agents still run (until their client timeout) is kept. A session whose store is
MongoDB has its documents removed from its database first (--dry-run counts them).
Sessions named are removed on the same terms (and only directories you own); one that is kept
is said on stderr, with why, and the exit status is 1. An unknown one is wrong usage.`;

interface CleanOptions {
  dir: string;
  olderThan: number;
  dryRun?: boolean;
  crashed?: boolean;
  json?: boolean;
}

/** One session directory `clean` removed (or would). */
interface Removed {
  uid: string;
  dir: string;
  state: string;
  bytes: number;
  /** A MongoDB session's documents: where, and how many were removed (or would be). */
  mongodb?: { hosts: string[]; db: string; documents: number };
}

/** A session meant to go that was kept, and why. */
interface Kept {
  uid: string;
  dir: string;
  error: string;
}

/** One connection per MongoDB URI for the whole run (a failed one: its error, once). */
type Servers = Map<string, Promise<MongoSessionDocuments>>;

/** `pilotfish clean`: removes the directories of ended sessions. */
export function registerClean(program: Command, done: (code: number) => void): void {
  program
    .command('clean')
    .argument('[session...]', 'only these sessions: their uids, or the paths of their directories')
    .summary('remove the directories of ended sessions')
    .description(
      'Removes the directories of the sessions in --dir that ended (closed by their client) at ' +
        'least --older-than days ago (for a session whose store is MongoDB, its documents ' +
        'too), and says what it removed and the space freed.',
    )
    .option('--dir <sessions-dir>', 'where the sessions are', DEFAULT_SESSIONS_DIR)
    .option('--older-than <days>', 'only sessions that ended at least this long ago', days, 0)
    .option('--crashed', 'also sessions whose client died without closing them')
    .option('--dry-run', 'say what would be removed, remove nothing')
    .option('--json', 'print one JSON document: {removed: [...], failed: [...], bytes, dryRun}')
    .addHelpText('after', EXIT_STATUS)
    .action(async (sessions: string[], opts: CleanOptions) =>
      done(await usageErrors(() => clean(opts, sessions))),
    );
}

/** Why the session in `dir` may not go now (said when the user named it), or undefined. */
async function keptBecause(
  dir: string,
  opts: CleanOptions,
  before: number,
): Promise<string | undefined> {
  const owner = statSync(dir).uid;
  if (owner !== process.getuid?.()) return `owned by uid ${owner}, not you`;
  // the journal first (cheap), then whether a client answers (a session may be live in a
  // client whose socket is gone, but a crashed one's journal has no close mark either)
  const life = journalLife(dir);
  if (life.state === 'crashed' && opts.crashed !== true) {
    if (await answers(dir)) return 'live: its client answers on its control socket';
    return 'crashed: its client died without closing it (it can be resumed; --crashed removes it)';
  }
  // a crashed session's last sign of life: its files' last change
  const ended = life.closed ?? statSync(dir).mtimeMs;
  if (ended > before) return `ended less than --older-than ${opts.olderThan} days ago`;
  if (await answers(dir)) return 'live: its client answers on its control socket';
  // a crashed session's local agents work on until their client timeout: not under them
  if (life.state === 'crashed' && liveAgents(dir).length > 0) {
    return 'its local agents still run (until their client timeout)';
  }
  return undefined;
}

async function clean(opts: CleanOptions, sessions: string[] = []): Promise<number> {
  // the sessions named (a UsageError for one that is not there), else every one in --dir
  const named = sessions.map((s) => resolveSessionDir(s, opts.dir));
  const before = Date.now() - opts.olderThan * 86_400_000;
  const dryRun = opts.dryRun === true;
  const removed: Removed[] = [];
  const failed: Kept[] = [];
  const keep = (dir: string, error: string): void => {
    const uid = path.basename(dir);
    failed.push({ uid, dir, error });
    process.stderr.write(`pilotfish: kept ${uid}: ${error}\n`);
  };
  const servers: Servers = new Map();
  try {
    for (const dir of named.length > 0 ? [...new Set(named)] : listSessionDirs(opts.dir)) {
      const why = await keptBecause(dir, opts, before);
      if (why !== undefined) {
        if (named.length > 0) keep(dir, why);
        continue;
      }
      const life = journalLife(dir);
      const bytes = diskUsage(dir);
      // a MongoDB session's documents go first: its directory holds the only record of where
      // they are, so it stays while they cannot be removed
      let mongodb: Removed['mongodb'];
      try {
        mongodb = await mongoDocuments(dir, dryRun, servers);
      } catch (e) {
        keep(dir, `its documents in MongoDB could not be removed: ${coerceError(e).message}`);
        continue;
      }
      if (!dryRun) {
        try {
          rmSync(dir, { recursive: true, force: true });
        } catch (e) {
          keep(dir, `cannot remove ${dir}: ${(e as Error).message}`);
          continue;
        }
      }
      const r: Removed = { uid: path.basename(dir), dir, state: life.state, bytes };
      removed.push(mongodb === undefined ? r : { ...r, mongodb });
    }
  } finally {
    await closeAll(servers);
  }
  report(opts, removed, failed);
  return failed.length > 0 ? EXIT.failed : EXIT.ok;
}

/**
 * Removes (or, for a dry run, counts) the documents of the session in `dir` whose store is
 * MongoDB; undefined for an embedded one. Throws when they cannot be: no server answers,
 * the server refuses, or store.json is damaged. Errors name the hosts, never the URI.
 */
async function mongoDocuments(
  dir: string,
  dryRun: boolean,
  servers: Servers,
): Promise<Removed['mongodb']> {
  const choice = readStoreChoice(dir);
  if (choice.kind !== 'mongodb') return undefined;
  let server = servers.get(choice.uri);
  if (server === undefined) {
    server = MongoSessionDocuments.connect(choice.uri);
    server.catch(() => undefined); // its error is reported for each of its sessions
    servers.set(choice.uri, server);
  }
  const docs = await server;
  const uid = path.basename(dir);
  const n = dryRun ? await docs.count(choice.db, uid) : await docs.remove(choice.db, uid);
  return {
    hosts: docs.target.hosts,
    db: choice.db,
    documents: n.notifications + n.counters + n.mirror,
  };
}

async function closeAll(servers: Servers): Promise<void> {
  await Promise.allSettled([...servers.values()].map(async (s) => (await s).close()));
}

function report(opts: CleanOptions, removed: Removed[], failed: Kept[]): void {
  const bytes = removed.reduce((n, r) => n + r.bytes, 0);
  const dryRun = opts.dryRun === true;
  if (opts.json === true) {
    process.stdout.write(
      JSON.stringify({ dir: path.resolve(opts.dir), dryRun, removed, failed, bytes }) + '\n',
    );
    return;
  }
  const verb = dryRun ? 'would remove' : 'removed';
  for (const r of removed) {
    const docs =
      r.mongodb === undefined
        ? ''
        : `, ${documents(r.mongodb.documents)} in MongoDB at ${r.mongodb.hosts.join(',')}/${r.mongodb.db}`;
    process.stdout.write(`${verb} ${r.uid} (${r.state}, ${formatBytes(r.bytes)}${docs})\n`);
  }
  const what = `${removed.length} session${removed.length === 1 ? '' : 's'}`;
  const inMongo = removed.reduce((n, r) => n + (r.mongodb?.documents ?? 0), 0);
  const docs = removed.some((r) => r.mongodb !== undefined)
    ? `, and ${documents(inMongo)} in MongoDB`
    : '';
  process.stdout.write(`${verb} ${what}, ${formatBytes(bytes)}${dryRun ? '' : ' freed'}${docs}\n`);
}

const documents = (n: number): string => `${n} document${n === 1 ? '' : 's'}`;

/** Whether a client answers on the session's control socket (a live or closing session). */
async function answers(dir: string): Promise<boolean> {
  return (await ask(dir, { op: 'status', pending: 0, running: 0 }, SURVEY_ANSWER_MS)) !== undefined;
}

function days(v: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < 0) {
    throw new InvalidArgumentError('must be a number of days, 0 or more');
  }
  return n;
}
