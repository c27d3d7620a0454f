import { lstatSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { fixtures } from '../../support/session-fixture';

/** Every directory and file under `dir` whose mode lets anyone but the owner in. */
function openToOthers(dir: string): string[] {
  const out: string[] = [];
  const visit = (p: string): void => {
    const st = lstatSync(p);
    if ((st.mode & 0o077) !== 0) {
      out.push(`${path.relative(dir, p) || '.'} ${(st.mode & 0o777).toString(8)}`);
    }
    if (st.isDirectory()) for (const e of readdirSync(p)) visit(path.join(p, e));
  };
  visit(dir);
  return out;
}

describe('files a session writes', () => {
  const fixture = fixtures();

  it("are their owner's alone, whatever the umask: session, pilot and task directories and files", async () => {
    const before = process.umask(0o022);
    try {
      const fx = await fixture.open({ cores: 1 });
      await fx.tmgr.submitTasks([
        { executable: '/bin/sh', arguments: ['-c', 'echo out; echo err >&2'] },
      ]);
      await fx.tmgr.waitTasks({ timeoutMs: 20_000 });
      const [task] = fx.tmgr.list();
      expect(task!.state).toBe('DONE');
      await fx.session.close(); // agent.log, the store's last segment and the logs are written
      const files = readdirSync(fx.session.dir);
      expect(files).toEqual(expect.arrayContaining(['journal.jsonl', 'delivered', 'client.log']));
      expect(readdirSync(path.join(fx.session.dir, fx.pilot.uid))).toEqual(
        expect.arrayContaining(['agent.log', 'agent.json', 'agent.out', 'agent.err', task!.uid]),
      );
      expect(readdirSync(task!.sandbox!).sort()).toEqual(['stderr', 'stdout']);
      expect(openToOthers(fx.session.dir)).toEqual([]);
    } finally {
      process.umask(before);
    }
  }, 30_000);
});
