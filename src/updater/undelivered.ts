import { randomBytes } from 'node:crypto';
import {
  closeSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import * as path from 'node:path';
import type { Notification, StoreRequest } from '../generated';
import { errnoOf } from '../lib/errno-text';
import type { Logger } from '../lib/logger';
import { PRIVATE_FILE } from '../lib/private-files';
import { parseStoreRequest } from '../lib/validate';
import { decode, encode } from '../transport/codec';

/**
 * What an agent's UpdateWorkers could not deliver when the agent ended without its client (its
 * grace ran out): kept in the pilot's sandbox as `undelivered.<worker>.<random>` (mode 0600),
 * store requests framed as the spill file's (4-byte little-endian length, then msgpack), so that
 * a resumed client appends them to the store before it decides which tasks never ran: a task
 * that ran while its client was away is not run again.
 */
const PREFIX = 'undelivered.';
const HEADER_BYTES = 4;
/** Notifications per request in the file (the store's batch). */
const PER_REQUEST = 1024;

/** Writes `notifications` into `dir`; returns the file, or undefined when there was none. */
export function keepUndelivered(
  dir: string,
  name: string,
  batch: Omit<StoreRequest, 'batch' | 'notifications'>,
  notifications: readonly Notification[],
): string | undefined {
  if (notifications.length === 0) return undefined;
  const file = path.join(dir, `${PREFIX}${name}.${randomBytes(4).toString('hex')}`);
  const fd = openSync(file, 'wx', PRIVATE_FILE);
  try {
    for (let i = 0; i < notifications.length; i += PER_REQUEST) {
      const request: StoreRequest = {
        ...batch,
        batch: `${name}.undelivered.${i / PER_REQUEST}`,
        notifications: notifications.slice(i, i + PER_REQUEST),
      };
      const body = encode(request);
      const frame = Buffer.allocUnsafe(HEADER_BYTES + body.length);
      frame.writeUInt32LE(body.length, 0);
      body.copy(frame, HEADER_BYTES);
      writeSync(fd, frame);
    }
  } finally {
    closeSync(fd);
  }
  return file;
}

/**
 * The notifications a pilot's agent left in `sandbox` for session `session`, each file checked
 * as any store request from that pilot is (its schema, its session and pilot) and as a private
 * file of this user (0600, own uid); files are removed once read. What fails a check is logged
 * and left where it is.
 */
export function readUndelivered(
  sandbox: string,
  session: string,
  pilot: string,
  log: Logger,
): { notifications: Notification[]; files: string[] } {
  const notifications: Notification[] = [];
  const files: string[] = [];
  let names: string[];
  try {
    names = readdirSync(sandbox).filter((n) => n.startsWith(PREFIX));
  } catch {
    return { notifications, files }; // not visible here: nothing to take
  }
  for (const name of names) {
    const file = path.join(sandbox, name);
    try {
      const st = statSync(file);
      const uid = process.getuid?.();
      if ((st.mode & 0o077) !== 0 || (uid !== undefined && st.uid !== uid)) {
        throw new Error('not a private file of this user');
      }
      const buf = readFileSync(file);
      const found: Notification[] = [];
      for (let at = 0; at < buf.length;) {
        const n = buf.readUInt32LE(at);
        const r = parseStoreRequest(decode(buf.subarray(at + HEADER_BYTES, at + HEADER_BYTES + n)));
        if (r.session !== session || r.pilot !== pilot) {
          throw new Error(`names session '${r.session}', pilot '${String(r.pilot)}'`);
        }
        found.push(...r.notifications);
        at += HEADER_BYTES + n;
      }
      notifications.push(...found);
      files.push(file);
    } catch (e) {
      log.warn('undelivered notifications not taken', {
        file,
        why: e instanceof Error ? e.message : String(e),
        errno: errnoOf(e),
      });
    }
  }
  return { notifications, files };
}

/** Removes the files once their notifications are in the store. */
export function removeUndelivered(files: readonly string[], log: Logger): void {
  for (const file of files) {
    try {
      unlinkSync(file);
    } catch (e) {
      log.warn('undelivered notifications file not removed', { file, errno: errnoOf(e) });
    }
  }
}
