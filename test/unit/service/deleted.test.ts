import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DELETED_FILE, DeletedTasks } from '../../../src/service/deleted';

describe('DeletedTasks: deletions outlive a restart', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-deleted-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('reads back what it wrote (0600), a line torn by a crash left out', () => {
    const d = new DeletedTasks(dir);
    d.add('a');
    d.add('b');
    d.add('a');
    const file = path.join(dir, DELETED_FILE);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    fs.appendFileSync(file, '{"uid":"c","at'); // torn: never answered
    const again = new DeletedTasks(dir);
    expect(['a', 'b', 'c'].map((u) => again.has(u))).toEqual([true, true, false]);
    again.add('d'); // after the torn line: its own line still
    expect(new DeletedTasks(dir).has('d')).toBe(true);
  });
});
