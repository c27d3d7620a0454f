import { closeSync, existsSync, fsyncSync, openSync, readFileSync, writeSync } from 'node:fs';
import * as path from 'node:path';
import { PRIVATE_FILE } from '../lib/private-files';

export const DELETED_FILE = 'deleted.jsonl';

/**
 * The tasks deleted through the API (DELETE /v1/tasks/{uid}): a line each in
 * `<serve dir>/deleted.jsonl`, synced before the reply, so a restart keeps them deleted. The
 * session keeps its history (the store, the event stream); the API no longer shows the task, and
 * its uid is not taken again.
 */
export class DeletedTasks {
  private readonly uids = new Set<string>();
  private readonly file: string;

  constructor(dir: string) {
    this.file = path.join(dir, DELETED_FILE);
    if (!existsSync(this.file)) return;
    for (const line of readFileSync(this.file, 'utf8').split('\n')) {
      // a line cut by a crash was never answered: it did not happen
      try {
        const uid = (JSON.parse(line) as { uid?: unknown }).uid;
        if (typeof uid === 'string') this.uids.add(uid);
      } catch {
        continue;
      }
    }
  }

  has(uid: string): boolean {
    return this.uids.has(uid);
  }

  add(uid: string): void {
    if (this.uids.has(uid)) return;
    const fd = openSync(this.file, 'a', PRIVATE_FILE);
    try {
      writeSync(fd, `\n${JSON.stringify({ uid, at: new Date().toISOString() })}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    this.uids.add(uid);
  }
}
