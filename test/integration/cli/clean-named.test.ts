import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { runCli } from '../../support/cli';
import { tempDirs } from '../../support/temp-dirs';

/** A session directory as Session.open names them: ended (a close mark) or crashed (none). */
function session(parent: string, ended: boolean): string {
  const uid = `pf.20260101.000000.${randomBytes(3).toString('hex')}`;
  mkdirSync(path.join(parent, uid), { mode: 0o700 });
  const journal = ended ? JSON.stringify({ t: 'closed', at: 1 }) + '\n' : '';
  writeFileSync(path.join(parent, uid, 'journal.jsonl'), journal);
  return uid;
}

interface CleanJson {
  removed: { uid: string }[];
  failed: { uid: string; error: string }[];
}

describe('pilotfish clean SESSION...', () => {
  const temp = tempDirs('pf-clean-named-');

  it('removes the ended sessions named, and only those', async () => {
    const parent = temp.make();
    const [a, b, other] = [session(parent, true), session(parent, true), session(parent, true)];
    const r = await runCli(['clean', a, path.join(parent, b), '--json', '--dir', parent]);
    expect([r.code, r.stderr]).toEqual([0, '']);
    const out = JSON.parse(r.stdout) as CleanJson;
    expect(out.removed.map((x) => x.uid).sort()).toEqual([a, b].sort());
    expect([existsSync(path.join(parent, a)), existsSync(path.join(parent, other))]).toEqual([
      false,
      true,
    ]);
  });

  it('keeps a crashed one (unless --crashed) and one owned by another user, saying why: exit 1', async () => {
    const parent = temp.make();
    const [crashed, theirs, mine] = [
      session(parent, false),
      session(parent, true),
      session(parent, true),
    ];
    const root = process.getuid?.() === 0;
    if (root) chownSync(path.join(parent, theirs), 65534, 65534);
    const named = root ? [crashed, theirs, mine] : [crashed, mine];
    const r = await runCli(['clean', ...named, '--dir', parent]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `pilotfish: kept ${crashed}: crashed: its client died without closing it`,
    );
    if (root) expect(r.stderr).toContain(`pilotfish: kept ${theirs}: owned by uid 65534, not you`);
    expect(r.stdout).toContain(`removed ${mine} (ended`);
    expect(existsSync(path.join(parent, crashed))).toBe(true);
    const again = await runCli(['clean', crashed, '--crashed', '--dir', parent]);
    expect([again.code, again.stdout]).toEqual([
      0,
      expect.stringContaining(`removed ${crashed} (crashed`),
    ]);
  });

  it('is wrong usage for a session that is not there: nothing removed, exit 2', async () => {
    const parent = temp.make();
    const kept = session(parent, true);
    const r = await runCli(['clean', kept, 'pf.20260101.000000.ffffff', '--dir', parent]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^pilotfish: .*pf\.20260101\.000000\.ffffff/);
    expect(existsSync(path.join(parent, kept))).toBe(true);
  });
});
