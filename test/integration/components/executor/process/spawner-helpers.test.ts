/**
 * The spawner helpers themselves, each run through SpawnerPool and spoken to directly: exec
 * failures, odd arguments, kills of whole process trees, signals, the end of stdin, bad input.
 * The C helper (pf-spawner) and the Node helper (process/helper/main.ts) must behave the same, so every
 * case runs against both, except those about the C helper's own JSON reader.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { UsageError } from '../../../../../src/errors';
import type { SpawnSpec } from '../../../../../src/components/executor/effects';
import {
  SPAWNER_ENV,
  SpawnerPool,
  nativeSpawner,
  type SpawnerHelper,
} from '../../../../../src/components/executor/process/spawner-pool';
import { silentLogger } from '../../../../../src/lib/logger';
import {
  Events,
  RawHelper,
  describeEachHelper,
  procIds,
  recordingLogger,
  tempSandboxes,
} from './spawner-fixtures';
import { cleanupFifos, fifo } from '../../../../support/fifo';

const { dir: tempDir, spec } = tempSandboxes('pf-helpers-');

/** The spawn request a pool sends for `s`. */
function request(s: SpawnSpec): object {
  return { op: 'spawn', ...s };
}

/** Shell words for a `sleep 30` in a process group of its own that prints its pid once there. */
const PGRP_SLEEP = `perl -e '$| = 1; setpgrp(0, 0); print "$$\\n"; exec "sleep", "30"'`;

/** Shell words for a `sleep 30` in a session of its own that prints its pid once there. */
const SESSION_SLEEP = `setsid sh -c 'echo $$; exec sleep 30'`;

/** A shell that leaves three sleeps (in its group, in a group, in a session) and prints 3 lines. */
const TREE = `sleep 30 & echo $!; ${PGRP_SLEEP} & ${SESSION_SLEEP} & wait`;

describeEachHelper('a spawner helper run by SpawnerPool', (helper: SpawnerHelper) => {
  let pool: SpawnerPool | undefined;
  let events: Events;

  afterEach(async () => {
    await pool?.close();
    pool = undefined;
    cleanupFifos();
  });

  async function start(count = 1): Promise<SpawnerPool> {
    events = new Events();
    pool = await SpawnerPool.start({
      count,
      logger: silentLogger,
      handlers: events.handlers,
      helper,
    });
    return pool;
  }

  async function failureOf(s: SpawnSpec): Promise<{ code: string; message: string }> {
    const p = pool ?? (await start());
    p.spawn(s);
    const f = await events.failure(s.uid);
    expect(events.started.has(s.uid)).toBe(false);
    return { code: f.code, message: f.message };
  }

  it('runs the helper it was asked for', async () => {
    const lines: string[] = [];
    events = new Events();
    pool = await SpawnerPool.start({
      count: 1,
      logger: recordingLogger(lines),
      handlers: events.handlers,
      helper,
    });
    expect(pool.helper).toBe(helper);
    expect(lines).toEqual(['info spawner helpers started']);
  });

  describe('reports a task that cannot start as failed, never as an exit', () => {
    it('a missing executable: ENOENT', async () => {
      expect(await failureOf(spec('/no/such/exe'))).toEqual({
        code: 'ENOENT',
        message: 'no such file or directory',
      });
    });

    it('a file without execute permission: EACCES', async () => {
      const s = spec('/bin/true');
      s.executable = path.join(s.cwd, 'script');
      fs.writeFileSync(s.executable, '#!/bin/sh\necho hi\n', { mode: 0o644 });
      expect(await failureOf(s)).toEqual({ code: 'EACCES', message: 'permission denied' });
    });

    it('a directory as the executable: EACCES', async () => {
      const s = spec('/bin/true');
      s.executable = s.cwd;
      expect(await failureOf(s)).toEqual({ code: 'EACCES', message: 'permission denied' });
    });

    it('a name found nowhere in PATH: ENOENT', async () => {
      expect(await failureOf(spec('pf-no-such-command'))).toEqual({
        code: 'ENOENT',
        message: 'no such file or directory',
      });
    });

    it('a missing working directory, named', async () => {
      const s = spec('/bin/true');
      s.cwd = path.join(s.cwd, 'gone');
      expect(await failureOf(s)).toEqual({
        code: 'ENOENT',
        message: `working directory '${s.cwd}' does not exist`,
      });
    });

    it('a working directory that is a file: ENOTDIR, named', async () => {
      const s = spec('/bin/true');
      s.cwd = path.join(s.cwd, 'file');
      fs.writeFileSync(s.cwd, '');
      expect(await failureOf(s)).toEqual({
        code: 'ENOTDIR',
        message: `cannot enter the working directory '${s.cwd}': a path component is not a directory`,
      });
    });

    it('an stdout path that cannot be opened, named', async () => {
      const s = spec('/bin/true');
      s.stdoutPath = path.join(s.cwd, 'no-dir', 'stdout');
      expect(await failureOf(s)).toEqual({
        code: 'ENOENT',
        message: `cannot open '${s.stdoutPath}' for writing: no such file or directory`,
      });
      const t = spec('/bin/true');
      t.stderrPath = t.cwd; // a directory
      expect(await failureOf(t)).toEqual({
        code: 'EISDIR',
        message: `cannot open '${t.cwd}' for writing: is a directory`,
      });
    });

    it('a task directory (mkdir) whose parent is missing, named; nothing of the task is made', async () => {
      const s = spec('/bin/true');
      s.mkdir = path.join(s.cwd, 'no-dir', 'own');
      s.cwd = s.mkdir;
      s.stdoutPath = path.join(s.mkdir, 'stdout');
      expect(await failureOf(s)).toEqual({
        code: 'ENOENT',
        message: `cannot make the task directory '${s.mkdir}': no such file or directory`,
      });
      expect(fs.existsSync(path.join(s.mkdir, '..'))).toBe(false);
    });

    it('an argument over the kernel limit (128 KiB): E2BIG', async () => {
      expect(await failureOf(spec('/bin/true', ['x'.repeat(200_000)]))).toEqual({
        code: 'E2BIG',
        message: 'argument list too long',
      });
    });

    it.each([
      ['an argument', (s: SpawnSpec) => (s.args = ['ok', 'a\0b']), 'args[1]'],
      ['the executable', (s: SpawnSpec) => (s.executable = '/bin/true\0x'), 'executable'],
      ['the environment', (s: SpawnSpec) => (s.env = { A: 'b\0c' }), 'env'],
      ['the working directory', (s: SpawnSpec) => (s.cwd = `${s.cwd}\0x`), 'cwd'],
      ['the task directory', (s: SpawnSpec) => (s.mkdir = `${s.cwd}\0x`), 'mkdir'],
    ])('a NUL byte in %s: EINVAL', async (_what, spoil, field) => {
      const s = spec('/bin/true');
      spoil(s);
      expect(await failureOf(s)).toEqual({
        code: 'EINVAL',
        message: `${field} contains a NUL byte`,
      });
    });
  });

  it('makes the task directory (mkdir) before its files and output, 0700, and takes one that exists', async () => {
    const p = await start();
    const base = spec('/bin/sh', ['-c', 'cat hostfile; pwd']);
    const own = path.join(base.cwd, 'own');
    const s: SpawnSpec = {
      ...base,
      cwd: own,
      mkdir: own,
      stdoutPath: path.join(own, 'stdout'),
      stderrPath: path.join(own, 'stderr'),
      files: [{ path: path.join(own, 'hostfile'), content: 'n1\n' }],
    };
    p.spawn(s);
    expect((await events.exit(s.uid)).exitCode).toBe(0);
    expect(fs.readFileSync(s.stdoutPath, 'utf8')).toBe(`n1\n${own}\n`);
    expect(fs.statSync(own).mode & 0o777).toBe(0o700);
    const again = { ...s, uid: `${s.uid}.again`, files: [] };
    p.spawn(again);
    expect((await events.exit(again.uid)).exitCode).toBe(0);
  });

  it('passes arguments and environment values byte for byte: newlines, quotes, unicode', async () => {
    const p = await start();
    const odd = [
      '',
      ' ',
      'a b',
      'line1\nline2',
      'cr\rlf\n',
      `it's "quoted" \\ back\\slash`,
      '$HOME `id` * ?',
      'tab\there',
      '\u0001\u001f\u007f',
      'héllo wörld ✓ 日本語 😀',
      '\u2028\u2029',
      '{"op":"spawn"}\n{"op":"kill"}',
      'lone \ud800 surrogate',
    ];
    const s = spec('/usr/bin/printf', ['%s\\0', ...odd], { PF_ODD: odd.join('|') });
    p.spawn(s);
    expect(await events.exit(s.uid)).toMatchObject({ exitCode: 0 });
    const expected = odd.map((a) => a.replace('\ud800', '\ufffd'));
    expect(fs.readFileSync(s.stdoutPath, 'utf8')).toBe(expected.map((a) => `${a}\0`).join(''));
    const e = spec('/usr/bin/printenv', ['PF_ODD'], { PF_ODD: odd.join('|') });
    p.spawn(e);
    expect(await events.exit(e.uid)).toMatchObject({ exitCode: 0 });
    expect(fs.readFileSync(e.stdoutPath, 'utf8')).toBe(`${expected.join('|')}\n`);
  });

  it('passes a huge argument list', async () => {
    const p = await start();
    const args = Array.from({ length: 50_000 }, (_, i) => `arg-${i}`);
    const s = spec('/bin/sh', ['-c', 'echo $# "$1" "${50000}"', 'sh', ...args]);
    p.spawn(s);
    expect(await events.exit(s.uid)).toMatchObject({ exitCode: 0 });
    expect(fs.readFileSync(s.stdoutPath, 'utf8')).toBe('50000 arg-0 arg-49999\n');
  });

  it("looks the executable up in the task's PATH and runs a script without #! under sh", async () => {
    const p = await start();
    const bin = path.join(tempDir(), `bin-${helper}`);
    fs.mkdirSync(bin);
    fs.writeFileSync(path.join(bin, 'pf-hello'), 'echo "hello $1 from $0"\n', { mode: 0o755 });
    const s = spec('pf-hello', ['there'], { PATH: `/nonexistent:${bin}:/usr/bin:/bin` });
    p.spawn(s);
    expect(await events.exit(s.uid)).toMatchObject({ exitCode: 0 });
    expect(fs.readFileSync(s.stdoutPath, 'utf8')).toBe(
      `hello there from ${path.join(bin, 'pf-hello')}\n`,
    );
  });

  it('runs the task in a session and process group of its own, with stdin at /dev/null', async () => {
    const p = await start();
    const s = spec('/bin/sh', ['-c', 'echo $$; cat; exec sleep 30']);
    const out = fifo(s.stdoutPath);
    p.spawn(s);
    const pid = await events.pid(s.uid);
    expect(Number(await out.data())).toBe(pid);
    expect(procIds(pid)).toMatchObject({ pgrp: pid, sid: pid });
    p.kill(s.uid, 'SIGKILL');
    await events.exit(s.uid);
  });

  it.each(['SIGUSR1', 'SIGALRM', 'SIGHUP'])(
    'reports an exit by %s with the signal name',
    async (signal) => {
      const p = await start();
      const s = spec('/bin/sh', ['-c', `kill -${signal.slice(3)} $$; exit 9`]);
      p.spawn(s);
      expect(await events.exit(s.uid)).toEqual({ uid: s.uid, exitCode: null, signal });
    },
  );

  it('passes a notice signal (SIGUSR2) on to the task, which goes on as it decides', async () => {
    const p = await start();
    const s = spec('/bin/sh', [
      '-c',
      'trap "exit 3" USR2; echo armed; while :; do sleep 0.05; done',
    ]);
    const out = fifo(s.stdoutPath);
    p.spawn(s);
    expect(await out.data()).toBe('armed\n'); // the trap is set: the signal cannot come first
    p.kill(s.uid, 'SIGUSR2');
    expect(await events.exit(s.uid)).toEqual({ uid: s.uid, exitCode: 3, signal: null });
  });

  it('gives the task SIGINT and SIGPIPE at their default action, though the helper ignores SIGINT', async () => {
    const p = await start();
    // A shell started with a signal ignored cannot undo it (POSIX): it would print "survived".
    const int = spec('/bin/sh', ['-c', 'kill -INT $$; echo survived']);
    const pipe = spec('/bin/sh', ['-c', 'kill -PIPE $$; echo survived']);
    p.spawn(int);
    p.spawn(pipe);
    expect(await events.exit(int.uid)).toMatchObject({ signal: 'SIGINT' });
    expect(await events.exit(pipe.uid)).toMatchObject({ signal: 'SIGPIPE' });
    expect(fs.readFileSync(int.stdoutPath, 'utf8')).toBe('');
  });

  it('kills a grandchild that moved to a process group of its own (session kill)', async () => {
    const p = await start();
    const s = spec('/bin/sh', ['-c', `${PGRP_SLEEP} & wait`]);
    const out = fifo(s.stdoutPath);
    p.spawn(s);
    const pid = await events.pid(s.uid);
    const grandchild = Number(await out.data());
    expect(procIds(grandchild)).toMatchObject({ pgrp: grandchild, sid: pid });
    p.kill(s.uid, 'SIGKILL');
    expect(await events.exit(s.uid)).toMatchObject({ signal: 'SIGKILL' });
    await out.gone(); // the grandchild held the FIFO: it is gone too
  });

  it('kills a grandchild that left for a session of its own (setsid)', async () => {
    const p = await start();
    const s = spec('/bin/sh', ['-c', `${SESSION_SLEEP} & wait`]);
    const out = fifo(s.stdoutPath);
    p.spawn(s);
    await events.pid(s.uid);
    const grandchild = Number(await out.data());
    expect(procIds(grandchild).sid).toBe(grandchild);
    p.kill(s.uid, 'SIGTERM');
    expect(await events.exit(s.uid)).toMatchObject({ signal: 'SIGTERM' });
    await out.gone();
  });

  it('kills every process tree when closed, and reports their exits', async () => {
    const p = await start(2);
    const specs = [0, 1, 2, 3].map(() => spec('/bin/sh', ['-c', TREE]));
    const outs = specs.map((s) => fifo(s.stdoutPath));
    for (const s of specs) p.spawn(s);
    await Promise.all(outs.map((o) => o.lines(3)));
    await p.close();
    for (const s of specs) expect(events.exited.get(s.uid)).toMatchObject({ signal: 'SIGKILL' });
    await Promise.all(outs.map((o) => o.gone()));
  });
});

describeEachHelper('a spawner helper spoken to directly', (helper: SpawnerHelper) => {
  let h: RawHelper | undefined;

  afterEach(async () => {
    await h?.close();
    h = undefined;
    cleanupFifos();
  });

  it('answers each malformed request with an error event and keeps serving', async () => {
    h = await RawHelper.start(helper);
    const s = spec('/bin/sh', ['-c', 'echo ok']);
    const bad = [
      '{"op":"spawn"}',
      '{"op":"spawn","uid":"x","executable":"/bin/true","args":[1],"env":{},"cwd":"/","stdoutPath":"/dev/null","stderrPath":"/dev/null"}',
      '{"op":"spawn","uid":"x","executable":"/bin/true","args":[],"env":{"A":1},"cwd":"/","stdoutPath":"/dev/null","stderrPath":"/dev/null"}',
      '{"op":"spawn","uid":"x","executable":"/bin/true","args":[],"env":[],"cwd":"/","stdoutPath":"/dev/null","stderrPath":"/dev/null"}',
      '{"op":"spawn","uid":"x","executable":"/bin/true","args":[],"env":{},"cwd":"/","stdoutPath":"/dev/null","stderrPath":"/dev/null","killScope":"group"}',
      '{"op":"spawn","uid":"x","executable":"/bin/true","args":[],"env":{},"cwd":"/","stdoutPath":"/dev/null","stderrPath":"/dev/null","files":[{"path":"/tmp/x"}]}',
      '{"op":"kill","uid":"x","signal":"SIGSTOP"}',
      '{"op":"kill","signal":"SIGKILL"}',
      '[]',
      '"spawn"',
      'null',
    ];
    const notJson = [
      '{"op":"spawn"',
      '{"op":"sp\\awn"}',
      '{"op":"spawn",}',
      '{"op":"spawn"} x',
      "{'op':'spawn'}",
      '{"a":01}',
    ];
    h.write([...bad, '', '   ', ...notJson].join('\n') + '\n');
    h.send(request(s));
    await h.of('exited', s.uid);
    const errors = h.events.filter((e) => e.ev === 'error').map((e) => e.message);
    expect(errors).toEqual([
      ...bad.map((l) => `bad request: ${l.slice(0, 200)}`),
      ...notJson.map((l) => `not JSON: ${l}`),
    ]);
    expect(fs.readFileSync(s.stdoutPath, 'utf8')).toBe('ok\n');
    expect(await h.end()).toEqual({ code: 0, signal: null });
  });

  it('quotes the first 200 characters of a bad line, whole characters', async () => {
    h = await RawHelper.start(helper);
    const line = `{"x":"${'é'.repeat(300)}`; // é: 2 bytes in UTF-8, 1 UTF-16 unit
    h.write(`${line}\n`);
    const e = await h.next('error', (ev) => ev.ev === 'error');
    expect(e.message).toBe(`not JSON: {"x":"${'é'.repeat(194)}`);
  });

  it('reads requests split across writes and many in one write', async () => {
    h = await RawHelper.start(helper);
    const specs = Array.from({ length: 20 }, (_, i) => spec('/bin/sh', ['-c', `echo ${i}`]));
    const text = specs.map((s) => JSON.stringify(request(s)) + '\n').join('');
    const cut = Math.floor(text.length / 3);
    h.write(text.slice(0, 7));
    h.write(text.slice(7, cut));
    h.write(text.slice(cut));
    for (const s of specs) expect(await h.of('exited', s.uid)).toMatchObject({ exitCode: 0 });
    expect(specs.map((s) => fs.readFileSync(s.stdoutPath, 'utf8'))).toEqual(
      specs.map((_, i) => `${i}\n`),
    );
  });

  it('decodes string escapes: \\uXXXX, surrogate pairs, a lone surrogate, \\u0000', async () => {
    h = await RawHelper.start(helper);
    const s = spec('/usr/bin/printf', []);
    const line = JSON.stringify(request(s)).replace(
      '"args":[]',
      String.raw`"args":["%s|","\u00e9\u65e5","\ud83d\ude00","x\ud800y","\t\n\"\\\/\b\f\r","\u0041"]`,
    );
    h.write(`${line}\n`);
    expect(await h.of('exited', s.uid)).toMatchObject({ exitCode: 0 });
    expect(fs.readFileSync(s.stdoutPath, 'utf8')).toBe('é日|😀|x\ufffdy|\t\n"\\/\b\f\r|A|');
    const t = spec('/bin/true');
    h.write(
      `${JSON.stringify(request(t)).replace('"args":[]', String.raw`"args":["a\u0000b"]`)}\n`,
    );
    expect(await h.of('failed', t.uid)).toMatchObject({
      code: 'EINVAL',
      message: 'args[0] contains a NUL byte',
    });
  });

  it('fails a spawn whose uid is already running (EEXIST); the first one runs on', async () => {
    h = await RawHelper.start(helper);
    const s = spec('/bin/sleep', ['30']);
    h.send(request(s));
    await h.of('started', s.uid);
    h.send(request({ ...s, executable: '/bin/true', args: [] }));
    expect(await h.of('failed', s.uid)).toEqual({
      ev: 'failed',
      uid: s.uid,
      code: 'EEXIST',
      message: `task '${s.uid}' is already running`,
    });
    h.send({ op: 'kill', uid: s.uid, signal: 'SIGKILL' });
    expect(await h.of('exited', s.uid)).toMatchObject({ signal: 'SIGKILL' });
  });

  it('ignores a kill of a uid it does not run', async () => {
    h = await RawHelper.start(helper);
    const s = spec('/bin/sh', ['-c', 'echo ok']);
    h.send({ op: 'kill', uid: 'nobody', signal: 'SIGKILL' }, request(s));
    await h.of('exited', s.uid);
    expect(h.events.map((e) => e.ev)).toEqual(['ready', 'started', 'exited']);
  });

  it.each(['stdin ends', 'SIGTERM', 'SIGHUP'] as const)(
    'when %s, kills every task tree, reports the exits and exits 0',
    async (how) => {
      h = await RawHelper.start(helper);
      const specs = [0, 1].map(() => spec('/bin/sh', ['-c', TREE]));
      const srun = spec('/bin/sh', ['-c', 'echo $$; exec sleep 30']);
      srun.killScope = 'process';
      const outs = [...specs, srun].map((s) => fifo(s.stdoutPath));
      h.send(...[...specs, srun].map(request));
      await Promise.all([...outs.slice(0, 2).map((o) => o.lines(3)), outs[2]!.lines(1)]);
      if (how === 'stdin ends') h.proc.stdin.end();
      else h.proc.kill(how);
      expect(await h.exit).toEqual({ code: 0, signal: null });
      for (const s of [...specs, srun]) {
        expect(h.events.find((e) => e.ev === 'exited' && e.uid === s.uid)).toMatchObject({
          exitCode: null,
          signal: 'SIGKILL',
        });
      }
      await Promise.all(outs.map((o) => o.gone()));
    },
  );

  it('ignores SIGINT: the agent decides', async () => {
    h = await RawHelper.start(helper);
    h.proc.kill('SIGINT');
    const s = spec('/bin/sh', ['-c', 'echo ok']);
    h.send(request(s));
    expect(await h.of('exited', s.uid)).toMatchObject({ exitCode: 0 });
    expect(h.proc.exitCode).toBeNull();
  });
});

const nativeBuilt = nativeSpawner() !== undefined;
const NOT_BUILT = ' (skipped: dist/native/pf-spawner not built)';

(nativeBuilt ? describe : describe.skip)(
  `the C helper (pf-spawner) JSON reader${nativeBuilt ? '' : NOT_BUILT}`,
  () => {
    let h: RawHelper | undefined;

    afterEach(async () => {
      await h?.close();
      h = undefined;
    });

    it('rejects invalid UTF-8, control characters in strings and deep nesting, and carries on', async () => {
      h = await RawHelper.start('native');
      const s = spec('/bin/sh', ['-c', 'echo ok']);
      const deep = `{"op":${'['.repeat(100)}${']'.repeat(100)}}`;
      h.write(
        Buffer.concat([
          Buffer.from('{"op":"sp'),
          Buffer.from([0xc3, 0x28]), // a broken 2-byte sequence
          Buffer.from('awn"}\n{"op":"\u0001"}\n'),
          Buffer.from(`${deep}\n`),
          Buffer.from(`${JSON.stringify(request(s))}\n`),
        ]),
      );
      await h.of('exited', s.uid);
      expect(h.events.filter((e) => e.ev === 'error').map((e) => e.message)).toEqual([
        'not JSON: {"op":"sp\ufffd(awn"}',
        'not JSON: {"op":"\u0001"}',
        `not JSON: ${deep.slice(0, 200)}`,
      ]);
    });

    it('keeps the last of duplicated members and ignores unknown ones, as JSON.parse does', async () => {
      h = await RawHelper.start('native');
      const s = spec('/bin/sh', ['-c', 'echo $A']);
      const line = JSON.stringify({ ...request(s), extra: { deep: [1, 2.5e-3, true, null] } })
        .replace('"env":{}', '"env":{"A":"first","A":"last"}')
        .replace('"executable":"/bin/sh"', '"executable":"/no/such","executable":"/bin/sh"');
      h.write(`${line}\n`);
      expect(await h.of('exited', s.uid)).toMatchObject({ exitCode: 0 });
      expect(fs.readFileSync(s.stdoutPath, 'utf8')).toBe('last\n');
    });
  },
);

describe('SpawnerPool helper choice', () => {
  const saved = process.env[SPAWNER_ENV];
  afterEach(() => {
    if (saved === undefined) delete process.env[SPAWNER_ENV];
    else process.env[SPAWNER_ENV] = saved;
  });

  const start = (helper?: SpawnerHelper): Promise<SpawnerPool> =>
    SpawnerPool.start({
      count: 1,
      logger: silentLogger,
      handlers: new Events().handlers,
      ...(helper === undefined ? {} : { helper }),
    });

  (nativeBuilt ? it : it.skip)(
    `runs the C helper by default once built${nativeBuilt ? '' : NOT_BUILT}`,
    async () => {
      delete process.env[SPAWNER_ENV];
      const p = await start();
      try {
        expect(p.helper).toBe('native');
      } finally {
        await p.close();
      }
    },
  );

  it(`takes the helper from ${SPAWNER_ENV} when no option names one`, async () => {
    process.env[SPAWNER_ENV] = 'node';
    const p = await start();
    try {
      expect(p.helper).toBe('node');
    } finally {
      await p.close();
    }
  });

  it('refuses an unknown helper, naming the allowed ones', async () => {
    process.env[SPAWNER_ENV] = 'bash';
    await expect(start()).rejects.toThrow(
      new UsageError(`${SPAWNER_ENV} must be one of native, node, got 'bash'`),
    );
    await expect(start('perl' as SpawnerHelper)).rejects.toThrow(
      new UsageError("SpawnerPool helper must be one of native, node, got 'perl'"),
    );
  });

  it('finds no C helper where none was built', () => {
    expect(nativeSpawner(path.join(tempDir(), 'a', 'b', 'c'))).toBeUndefined();
  });
});
