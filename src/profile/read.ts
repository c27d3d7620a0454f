import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Notification, TaskDescription } from '../generated';
import { readStoreNotifications } from '../updater/embedded/read-only';
import { MongoStore } from '../updater/mongodb/store';
import { readStoreChoice } from '../updater/store-choice';
import { buildProfile, type SessionFacts } from './build';
import type { RouterEntry } from './models';
import type { PilotNode, Profile } from './types';

/**
 * The profile of the session in `sessionDir`, read without disturbing it: a live session's
 * files are only read (a half-written last record or journal line is left out), so this works
 * on a running session and a finished one alike.
 */
export async function readProfile(sessionDir: string): Promise<Profile> {
  const readAt = Date.now();
  const facts = readSessionFacts(sessionDir);
  const notifications = await readNotifications(sessionDir);
  return buildProfile(path.basename(sessionDir), notifications, facts, readAt);
}

/**
 * Every notification the session's store holds, in acceptance order (read-only): its
 * embedded store's files, or its MongoDB documents (the store its store.json names).
 */
export async function readNotifications(sessionDir: string): Promise<Notification[]> {
  const choice = readStoreChoice(sessionDir);
  if (choice.kind === 'embedded') return readStoreNotifications(sessionDir);
  const store = await MongoStore.open(choice.uri, path.basename(sessionDir), {
    db: choice.db,
    readOnly: true,
  });
  try {
    return await store.history();
  } finally {
    await store.close();
  }
}

type JournalLine =
  | {
      t: 'pilots';
      pilots: { uid: string; description?: { resource?: string }; sandbox?: string }[];
    }
  | { t: 'agent'; pilot: string; nodes?: PilotNode[] }
  | { t: 'tasks'; tasks: [string, TaskDescription][] }
  | ({ t: 'router' } & RouterEntry)
  | { t: string };

/**
 * The descriptions, the pilots' sandboxes and the agents' nodes in the session's journal
 * (journal.jsonl), read-only.
 */
export function readSessionFacts(sessionDir: string): SessionFacts {
  const facts: SessionFacts = { tasks: new Map(), pilots: new Map() };
  let text: string;
  try {
    text = readFileSync(path.join(sessionDir, 'journal.jsonl'), 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return facts;
    throw e;
  }
  for (const line of text.split('\n')) {
    if (line === '') continue;
    let entry: JournalLine;
    try {
      entry = JSON.parse(line) as JournalLine;
    } catch {
      continue; // the line a live client is writing, or one a crash tore
    }
    if (entry.t === 'tasks' && 'tasks' in entry) {
      for (const [uid, d] of entry.tasks) facts.tasks.set(uid, d);
    } else if (entry.t === 'pilots' && 'pilots' in entry) {
      for (const p of entry.pilots) {
        const resource = p.description?.resource;
        facts.pilots.set(p.uid, {
          ...facts.pilots.get(p.uid),
          ...(resource !== undefined ? { resource } : {}),
          ...(p.sandbox !== undefined ? { sandbox: p.sandbox } : {}),
        });
      }
    } else if (entry.t === 'router' && 'event' in entry) {
      (facts.router ??= []).push({ ts: entry.ts, event: entry.event });
    } else if (entry.t === 'agent' && 'pilot' in entry && entry.nodes !== undefined) {
      facts.pilots.set(entry.pilot, { ...facts.pilots.get(entry.pilot), nodes: entry.nodes });
    }
  }
  return facts;
}
