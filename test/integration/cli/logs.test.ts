import { describe, expect, it } from '@jest/globals';
import {
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import { STREAM_MAGIC, encodeFrame, type FrameKind } from '../../../src/lib/output-frames';
import { runCli } from '../../support/cli';
import { fixtures, type Fixture } from '../../support/session-fixture';
import { tempDirs } from '../../support/temp-dirs';

const f = (kind: FrameKind, uid: string, data?: string | number[], attempt = 1): Buffer =>
  encodeFrame(
    kind,
    uid,
    attempt,
    data === undefined
      ? undefined
      : typeof data === 'string'
        ? Buffer.from(data)
        : Buffer.from(data),
  );

/**
 * A finished session on a local pilot: two tasks with output 'files' (their sandboxes' files),
 * two that streamed (the default) and whose frames the test writes by hand in place of their
 * helpers' files (they ran /bin/true: those held only their end frames), with what no real
 * task gives at will (another attempt's frames, a character cut across frames, a missing end
 * frame), and a function call. Returns the CLI arguments that name the session.
 */
async function session(fx: Fixture): Promise<string[]> {
  await fx.tmgr.submitTasks([
    {
      uid: 'files-a',
      executable: '/bin/sh',
      arguments: ['-c', 'echo a1; echo a2; echo aerr >&2; printf apartial'],
      output: 'files',
    },
    { uid: 'files-b', executable: '/bin/echo', arguments: ['b1'], output: 'files' },
    { uid: 'stream-c', executable: '/bin/true' },
    { uid: 'stream-d', executable: '/bin/true' },
    { uid: 'f-fun', mode: 'function', function: { module: 'node:os', export: 'hostname' } },
  ]);
  await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
  await fx.session.close();
  const dir = path.join(fx.pilot.sandbox, 'output');
  const helpers = readdirSync(dir);
  expect(helpers.length).toBeGreaterThan(0); // the helpers' own stream files, replaced:
  rmSync(dir, { recursive: true });
  mkdirSync(dir);
  writeFileSync(
    path.join(dir, 'spawner-0.pfout'),
    Buffer.concat([
      STREAM_MAGIC,
      f('stdout', 'stream-c', 'c1\nc'),
      f('stdout', 'task.elsewhere', 'not of this session\n'),
      f('stdout', 'stream-c', 'stale attempt\n', 2),
      f('stdout', 'stream-c', '2\n'),
      f('stderr', 'stream-c', 'cerr\n'),
      f('end', 'stream-c'),
    ]),
  );
  writeFileSync(
    path.join(dir, 'spawner-1.pfout'),
    Buffer.concat([
      STREAM_MAGIC,
      f('stdout', 'stream-d', 'd1\n'),
      f('stderr', 'stream-d', 'derr\n'),
      f('stdout', 'stream-d', [0xe2, 0x82]), // '€' cut across two frames
      f('stdout', 'stream-d', [0xac, 0x0a]),
      f('stdout', 'stream-d', 'dpartial'), // no end frame: a writer killed, or still at work
    ]),
  );
  return [fx.session.uid, '--dir', fx.dir];
}

describe('pilotfish logs', () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-cli-logs-');

  it("prints tasks' output from stream files and sandboxes, or writes it out as files", async () => {
    const fx = await fixture.open();
    const [s, ...dir] = await session(fx);
    const run = (...args: string[]) => runCli(['logs', s!, ...args, ...dir]);
    // every task: stream files in one pass (file order), then the sandboxes' files
    expect(await run()).toEqual({
      code: 0,
      stderr: '',
      stdout:
        'stream-c | c1\nstream-c | c2\nstream-d | d1\nstream-d | €\nstream-d | dpartial\n' +
        'files-a  | a1\nfiles-a  | a2\nfiles-a  | apartial\nfiles-b  | b1\n',
    });
    expect(await run('stream-c')).toEqual({ code: 0, stderr: '', stdout: 'c1\nc2\n' });
    expect((await run('stream-d', '--stderr')).stdout).toBe('derr\n');
    expect((await run('files-b', 'stream-c')).stdout).toBe(
      'stream-c | c1\nstream-c | c2\nfiles-b  | b1\n',
    );
    const json = await run('files-a', 'stream-c', '--stderr', '--json');
    expect(
      json.stdout
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as unknown),
    ).toEqual([
      { uid: 'stream-c', attempt: 1, stream: 'stderr', line: 'cerr' },
      { uid: 'files-a', attempt: 1, stream: 'stderr', line: 'aerr' },
    ]);

    const out = path.join(temp.make(), 'exported');
    expect(await run('--out', out)).toEqual({
      code: 0,
      stderr: '',
      stdout: `wrote the output of 4 tasks to ${out}\n`,
    });
    const written = {
      'files-a': ['a1\na2\napartial', 'aerr\n'],
      'files-b': ['b1\n', ''],
      'stream-c': ['c1\nc2\n', 'cerr\n'],
      'stream-d': ['d1\n€\ndpartial', 'derr\n'],
    };
    for (const [uid, [stdout, stderr]] of Object.entries(written)) {
      const at = (name: string) => path.join(out, uid, name);
      expect([uid, readFileSync(at('stdout'), 'utf8'), readFileSync(at('stderr'), 'utf8')]).toEqual(
        [uid, stdout, stderr],
      );
      const modes = [at(''), at('stdout'), at('stderr')].map((p) => statSync(p).mode & 0o777);
      expect([uid, modes]).toEqual([uid, [0o700, 0o600, 0o600]]);
    }
    expect(statSync(out).mode & 0o777).toBe(0o700);
    expect(() => statSync(path.join(out, 'f-fun'))).toThrow(/ENOENT/);
    // again, with --json: the files are written anew, not appended to
    expect((await run('stream-c', '--out', out, '--json')).stdout).toBe(
      `${JSON.stringify({ out, tasks: 1 })}\n`,
    );
    expect(readFileSync(path.join(out, 'stream-c', 'stdout'), 'utf8')).toBe('c1\nc2\n');
  }, 120_000);

  it('unknown tasks, damaged stream files and sandboxes not here: exit 1', async () => {
    const fx = await fixture.open();
    const [s, ...dir] = await session(fx);
    const run = (...args: string[]) => runCli(['logs', s!, ...args, ...dir]);
    expect(await run('stream-c', 'nope')).toEqual({
      code: 1,
      stdout: '',
      stderr: `pilotfish logs: no task 'nope' in session ${s}\n`,
    });
    // a function call that printed nothing has no lines: no problem (function-output.test.ts)
    expect(await run('f-fun', 'files-b')).toEqual({
      code: 0,
      stdout: 'files-b | b1\n',
      stderr: '',
    });
    const wrong = await run('--out', temp.make(), '--stderr');
    expect([wrong.code, wrong.stderr]).toEqual([
      2,
      'pilotfish: --out writes both stdout and stderr: leave out --stderr\n',
    ]);
    const none = await runCli(['logs', 'pf.20200101.000000.abcdef', ...dir]);
    expect([none.code, none.stderr]).toEqual([2, expect.stringMatching(/no session 'pf\.2020/)]);

    // a damaged stream file: what comes before the damage, the rest (stream-d's frames are in
    // the file after it), and the file named
    const damaged = path.join(fx.pilot.sandbox, 'output', 'spawner-1-damaged.pfout');
    expect([damaged, path.join(fx.pilot.sandbox, 'output', 'spawner-1.pfout')].sort()[0]).toBe(
      damaged,
    );
    writeFileSync(damaged, 'not frames');
    expect(await run('stream-d', 'files-b')).toEqual({
      code: 1,
      stdout: 'stream-d | d1\nstream-d | €\nstream-d | dpartial\nfiles-b  | b1\n',
      stderr: `pilotfish logs: ${damaged}: not an output stream file (no PFSTRM1 header)\n`,
    });
    // the pilot's sandbox is not on this machine (moved here to make it so)
    renameSync(fx.pilot.sandbox, `${fx.pilot.sandbox}.away`);
    expect(await run()).toEqual({
      code: 1,
      stdout: '',
      stderr:
        // the function call's output is in the pilot's stream files too
        "pilotfish logs: cannot read the output of 5 tasks (files-a…): their pilot's sandbox " +
        `${fx.pilot.sandbox} is not on this machine (nor read through a live session by the ` +
        "pilot's agent)\n",
    });
  }, 120_000);
});
