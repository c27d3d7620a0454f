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

  it("are their owner's alone, whatever the umask: session, pilot and task directories, stream files", async () => {
    const before = process.umask(0o022);
    try {
      const fx = await fixture.open({ cores: 1, agent: { taskJson: true } });
      const cmd = { executable: '/bin/sh', arguments: ['-c', 'echo out; echo err >&2'] };
      const [streamed, files] = await fx.tmgr.submitTasks([cmd, { ...cmd, output: 'files' }]);
      await fx.tmgr.waitTasks({ timeoutMs: 20_000 });
      expect([streamed!.state, files!.state]).toEqual(['DONE', 'DONE']);
      await fx.session.close(); // agent.log, the store's last segment and the logs are written
      const top = readdirSync(fx.session.dir);
      expect(top).toEqual(expect.arrayContaining(['journal.jsonl', 'delivered', 'client.log']));
      const pilotDir = path.join(fx.session.dir, fx.pilot.uid);
      const inPilot = ['agent.log', 'agent.json', 'agent.out', 'agent.err', 'output', files!.uid];
      expect(readdirSync(pilotDir)).toEqual(expect.arrayContaining(inPilot));
      // it streamed: its own directory holds only the task.json agent.taskJson asked for
      expect(readdirSync(path.join(pilotDir, streamed!.uid))).toEqual(['task.json']);
      expect(readdirSync(files!.sandbox!).sort()).toEqual(['stderr', 'stdout', 'task.json']);
      const streams = readdirSync(path.join(pilotDir, 'output'));
      expect(streams.length).toBeGreaterThan(0);
      for (const f of streams) expect(f).toMatch(/^spawner\.\d+\.\d+\.pfout$/);
      expect(openToOthers(fx.session.dir)).toEqual([]);
    } finally {
      process.umask(before);
    }
  }, 30_000);
});
