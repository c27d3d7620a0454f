import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { decodeFrames } from '../../../src/lib/output-frames';
import { fixtures } from '../../support/session-fixture';
import { collect, followGatedPrinter } from '../../support/tail-check';
import { gone } from '../../support/dir-entries';
import { tempDirs } from '../../support/temp-dirs';
import { runCli } from '../../support/cli';

describe("output 'stream' on a local pilot", () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-stream-');

  it('by default: gives tails, tail and logs the lines, keeps a task directory only when something is in it', async () => {
    const fx = await fixture.open({ cores: 2 });
    const pilotDir = path.join(fx.session.dir, fx.pilot.uid);
    const [echo, many, bad, files, own] = await fx.tmgr.submitTasks([
      {
        executable: '/bin/sh',
        arguments: ['-c', 'echo "in $PWD as $PF_TASK_SANDBOX"; echo oops >&2'],
      },
      { executable: '/bin/sh', arguments: ['-c', 'seq 1 5000'] },
      { executable: '/bin/sh', arguments: ['-c', 'echo first >&2; echo boom >&2; exit 3'] },
      { executable: '/bin/echo', arguments: ['to a file'], output: 'files' },
      {
        executable: '/bin/sh',
        arguments: ['-c', 'echo mine > mine.txt; echo done'],
        sandbox: true,
      },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    // a task that streams runs in a directory of its own, which is its PF_TASK_SANDBOX
    const echoDir = path.join(pilotDir, echo!.uid);
    expect([echo!.state, echo!.output, echo!.sandbox]).toEqual(['DONE', 'stream', echoDir]);
    expect(echo!.stdout).toBe(`in ${echoDir} as ${echoDir}\n`);
    expect(echo!.stderr).toBe('oops\n');
    // a tail is the last 2,048 bytes at most, cut at a line start; tail() has every line
    expect(many!.stdout!.length).toBeLessThanOrEqual(2048);
    expect(many!.stdout).toMatch(/^\d+\n(\d+\n)*5000\n$/);
    const lines = await collect(fx.tmgr.tail(many!.uid));
    expect(lines).toEqual(Array.from({ length: 5000 }, (_, i) => String(i + 1)));
    // a failure names its stderr's last line, as with files
    expect([bad!.state, bad!.reason?.code]).toEqual(['FAILED', 'E_EXIT_CODE']);
    expect(bad!.reason!.message).toContain('boom');
    expect(await collect(fx.tmgr.tail(bad!.uid, { stream: 'stderr' }))).toEqual(['first', 'boom']);
    // a task may still ask for files, or for a directory of its own
    expect([files!.state, files!.output]).toEqual(['DONE', 'files']);
    expect(fs.readFileSync(path.join(files!.sandbox!, 'stdout'), 'utf8')).toBe('to a file\n');
    expect([own!.state, own!.output, own!.stdout]).toEqual(['DONE', 'stream', 'done\n']);
    expect(fs.readdirSync(own!.sandbox!)).toEqual(['mine.txt']);
    // the others' stayed empty and were removed (in the background, once they ended): the
    // pilot's sandbox holds only these two
    await gone(
      [echo!, many!, bad!].map((t) => t.sandbox!),
      10_000,
    );
    const taskDirs = fs.readdirSync(pilotDir).filter((f) => f.startsWith('task.'));
    expect(taskDirs.sort()).toEqual([files!.uid, own!.uid].sort());
    // the stream files hold each streamed task's frames, closed by its end frame
    const frames = fs
      .readdirSync(path.join(pilotDir, 'output'))
      .flatMap((f) => decodeFrames(fs.readFileSync(path.join(pilotDir, 'output', f)), 0).frames);
    for (const t of [echo!, many!, bad!, own!]) {
      expect(frames.filter((f) => f.uid === t.uid && f.kind === 'end')).toHaveLength(1);
    }
    expect(frames.some((f) => f.uid === files!.uid)).toBe(false);
    // the command reads them too, from the session directory alone
    const out = await runCli(['logs', fx.session.dir, echo!.uid]);
    expect(out.stdout).toBe(`in ${echoDir} as ${echoDir}\n`);
  }, 90_000);

  it("on a pilot whose default is 'files', a task that asks streams: followed as it prints, to its end", async () => {
    const fx = await fixture.open({ cores: 1, agent: { output: 'files' } });
    const uid = await followGatedPrinter(fx.tmgr, temp.make(), { output: 'stream' });
    const [other] = await fx.tmgr.submitTasks([{ executable: '/bin/echo', arguments: ['x'] }]);
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    expect([fx.tmgr.get(uid)?.output, other!.output]).toEqual(['stream', 'files']);
    expect(fs.existsSync(path.join(fx.pilot.sandbox, uid))).toBe(false);
    expect(fs.readFileSync(path.join(other!.sandbox!, 'stdout'), 'utf8')).toBe('x\n');
    expect(await collect(fx.tmgr.tail(uid))).toEqual(['first', 'second', 'third', 'partial']);
  }, 90_000);
});
