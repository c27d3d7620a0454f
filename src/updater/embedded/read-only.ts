import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import type { Notification } from '../../generated';
import { parseNotification, parseNotificationBulk } from '../../lib/validate';
import { notificationKey } from '../../states/notification';
import { decodeNotifications } from '../notification-codec';
import { scanRecords } from './record';
import { segmentName } from './segments';

const SEGMENT_FILE = /^store(?:\.([1-9][0-9]*))?\.log$/;

/**
 * Every notification an embedded store in `dir` holds, in acceptance order, read without
 * opening the store: nothing is written, locked or repaired, so it works on a live session (its
 * last record may be half written: reading stops there) and on a finished one. Records that do
 * not decode or validate are skipped (the store's own open drops them the same way).
 */
export async function readStoreNotifications(dir: string): Promise<Notification[]> {
  const segments = (await fs.readdir(dir))
    .map((name) => SEGMENT_FILE.exec(name))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => (m[1] === undefined ? 0 : Number(m[1])))
    .sort((a, b) => a - b);
  const seen = new Set<string>();
  const out: Notification[] = [];
  for (const n of segments) {
    let buf: Buffer;
    try {
      buf = await fs.readFile(path.join(dir, segmentName(n)));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue; // rolled away meanwhile
      throw e;
    }
    for (const payload of scanRecords(buf).payloads) {
      let items: unknown;
      try {
        items = decodeNotifications(payload);
      } catch {
        continue;
      }
      if (!Array.isArray(items)) continue;
      for (const note of valid(items)) {
        const key = notificationKey(note);
        if (seen.has(key)) continue;
        seen.add(key);
        out.push(note);
      }
    }
  }
  return out;
}

/** The valid notifications among `items`: one validation of the whole (the usual case), else each. */
function valid(items: unknown[]): Notification[] {
  try {
    return parseNotificationBulk(items);
  } catch {
    const ok: Notification[] = [];
    for (const item of items) {
      try {
        ok.push(parseNotification(item));
      } catch {
        // skipped, as the store's own open does
      }
    }
    return ok;
  }
}
