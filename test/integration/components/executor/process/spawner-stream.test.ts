/**
 * Output 'stream' in the spawner helpers: a task's stdout and stderr through pipes, framed into
 * the helper's stream file (src/lib/output-frames.ts), its exit after its frames with the tails.
 * Every case runs against both helpers (the C pf-spawner and the Node process/helper/main.ts), which
 * must write the same bytes.
 */
import { afterEach, beforeAll, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { SpawnSpec } from '../../../../../src/components/executor/effects';
import {
  SpawnerPool,
  spawnerCommand,
  type SpawnerHelper,
  type SpawnerPoolOptions,
} from '../../../../../src/components/executor/process/spawner-pool';
import { readTailSync } from '../../../../../src/lib/file-tail';
import {
  FRAME_DATA_MAX,
  STREAM_MAGIC,
  decodeFrames,
  encodeFrame,
} from '../../../../../src/lib/output-frames';
import { silentLogger } from '../../../../../src/lib/logger';
import { closedGate, type FlockGate } from '../../../../support/flock-gate';
import { Events, RawHelper, describeEachHelper, tempSandboxes } from './spawner-fixtures';
import { StreamFrames, modeOf, streamSpec } from './stream-fixtures';

const { dir: tempDir, spec: fileSpec } = tempSandboxes('pf-stream-');

/** A shell running `script`, its $1.. being `args`. */
function sh(script: string, ...args: string[]): [string, string[]] {
  return ['/bin/sh', ['-c', script, 'sh', ...args]];
}

describeEachHelper('output stream through SpawnerPool', (helper: SpawnerHelper) => {
  let pool: SpawnerPool | undefined;
  let events: Events;
  let frames: StreamFrames;
  let streamDir: string;
  let gate: FlockGate | undefined;
  let runs = 0;

  afterEach(async () => {
    await pool?.close();
    pool = undefined;
    gate?.remove();
    gate = undefined;
  });

  async function start(more: Partial<SpawnerPoolOptions> = {}): Promise<SpawnerPool> {
    events = new Events();
    streamDir = path.join(tempDir(), `${helper}.${++runs}`, 'streams');
    pool = await SpawnerPool.start({
      count: 1,
      logger: silentLogger,
      handlers: events.handlers,
      helper,
      streamDir,
      ...more,
    });
    const p = pool;
    frames = new StreamFrames(streamDir, () => p.streamFiles());
    return p;
  }

  /** A 'stream' spawn of `executable` in the test's temp dir. */
  function spec(executable: string, args: string[] = [], attempt = 1): SpawnSpec {
    return streamSpec(tempDir(), executable, args, { attempt });
  }

  it('frames stdout and stderr apart, byte for byte, and the exit carries both tails', async () => {
    const p = await start();
    const s = spec(
      ...sh(String.raw`printf 'a\000b\377\376\n'; printf 'e\000rr\n' >&2; printf more`),
      7,
    );
    p.spawn(s);
    const exit = await events.exit(s.uid);
    const stdout = Buffer.from([0x61, 0, 0x62, 0xff, 0xfe, 0x0a, ...Buffer.from('more')]);
    const stderr = Buffer.from('e\0rr\n', 'latin1');
    // at the exit event, every byte is framed already
    expect(frames.data(s.uid, 'stdout')).toEqual(stdout);
    expect(frames.data(s.uid, 'stderr')).toEqual(stderr);
    expect(exit).toEqual({
      uid: s.uid,
      exitCode: 0,
      signal: null,
      output: {
        stdout: stdout.toString('utf8'),
        stderr: 'e\0rr\n',
        stdoutBytes: stdout.length,
        stderrBytes: stderr.length,
      },
    });
    const all = await frames.untilEnded([s.uid]);
    const own = frames.of(s.uid, all);
    expect(own.every((f) => f.attempt === 7)).toBe(true);
    expect(own.filter((f) => f.kind === 'end')).toEqual([
      { kind: 'end', uid: s.uid, attempt: 7, data: Buffer.alloc(0) },
    ]);
    expect(own.at(-1)?.kind).toBe('end');
  });

  it('lets a task write 10 MiB (far more than a pipe holds): all framed before its exit', async () => {
    const p = await start();
    const file = path.join(tempDir(), `big.${helper}`);
    const bytes = randomBytes(10 << 20);
    fs.writeFileSync(file, bytes);
    const s = spec('/bin/cat', [file]);
    p.spawn(s);
    expect(await events.exit(s.uid)).toMatchObject({
      exitCode: 0,
      output: { stdoutBytes: bytes.length, stderrBytes: 0 },
    });
    const now = frames.all();
    expect(frames.data(s.uid, 'stdout', now).equals(bytes)).toBe(true);
    expect(Math.max(...frames.of(s.uid, now).map((f) => f.data.length))).toBeLessThanOrEqual(
      FRAME_DATA_MAX,
    );
    const tail = bytes.subarray(bytes.length - 2048).toString('utf8');
    const nl = tail.indexOf('\n');
    expect(events.exited.get(s.uid)?.output?.stdout).toBe(
      nl >= 0 && nl < tail.length - 1 ? tail.slice(nl + 1) : tail,
    );
    await frames.untilEnded([s.uid]);
  }, 60_000);

  it('frames 200 concurrent tasks whole, each followed by exactly one end frame', async () => {
    const p = await start({ count: 2 });
    const specs = Array.from({ length: 200 }, (_, i) =>
      spec(...sh('echo "out $1"; echo "err $1" >&2; echo "more $1"', String(i))),
    );
    for (const s of specs) p.spawn(s);
    await events.until('200 exits', () => events.exited.size === 200, 60_000);
    const all = await frames.untilEnded(
      specs.map((s) => s.uid),
      30_000,
    );
    expect(p.streamFiles()).toEqual(
      [0, 1].map((i) => path.join(streamDir, `spawner.${i}.0.pfout`)),
    );
    specs.forEach((s, i) => {
      const own = frames.of(s.uid, all);
      expect(frames.data(s.uid, 'stdout', all).toString()).toBe(`out ${i}\nmore ${i}\n`);
      expect(frames.data(s.uid, 'stderr', all).toString()).toBe(`err ${i}\n`);
      expect(own.filter((f) => f.kind === 'end')).toHaveLength(1);
      expect(own.at(-1)?.kind).toBe('end');
      expect(events.exited.get(s.uid)?.output).toEqual({
        stdout: `out ${i}\nmore ${i}\n`,
        stderr: `err ${i}\n`,
        stdoutBytes: `out ${i}\nmore ${i}\n`.length,
        stderrBytes: `err ${i}\n`.length,
      });
    });
  }, 90_000);

  it('cuts the tails in the exit event at a line start, as file tails are', async () => {
    const p = await start();
    const s = spec(...sh('seq 1 5000; seq 1 3 >&2'));
    p.spawn(s);
    const exit = await events.exit(s.uid);
    const text = Array.from({ length: 5000 }, (_, i) => `${i + 1}\n`).join('');
    const file = path.join(tempDir(), `seq.${helper}`);
    fs.writeFileSync(file, text);
    expect(exit.output).toEqual({
      stdout: readTailSync(file),
      stderr: '1\n2\n3\n',
      stdoutBytes: text.length,
      stderrBytes: 6,
    });
    expect(exit.output?.stdout.startsWith('4')).toBe(true); // a whole line: 4xxx
    expect(text.endsWith(exit.output!.stdout)).toBe(true);
  });

  it('frames what a task left behind after its exit under its uid, then ends its output', async () => {
    const p = await start({ killGraceMs: 60_000 });
    gate = await closedGate(path.join(tempDir(), `gate.${helper}`));
    // the leftover ignores the SIGTERM at the main's exit (from its fork on: set before) and
    // writes once the gate opens
    const s = spec(
      ...sh(
        `trap '' TERM; echo early; (flock -s "$1" true; echo late; echo late-err >&2) &`,
        path.join(tempDir(), `gate.${helper}`),
      ),
    );
    p.spawn(s);
    // its exit comes while the leftover holds both pipes
    expect((await events.exit(s.uid)).output).toMatchObject({ stdout: 'early\n', stdoutBytes: 6 });
    expect(frames.data(s.uid, 'stdout').toString()).toBe('early\n');
    expect(frames.ended(s.uid)).toBe(false);
    await gate.open();
    const all = await frames.untilEnded([s.uid]);
    expect(frames.data(s.uid, 'stdout', all).toString()).toBe('early\nlate\n');
    expect(frames.data(s.uid, 'stderr', all).toString()).toBe('late-err\n');
    expect(frames.of(s.uid, all).at(-1)?.kind).toBe('end');
  });

  it("keeps each attempt's frames apart when a uid runs again while its leftovers write", async () => {
    const p = await start({ killGraceMs: 60_000 });
    const gatePath = path.join(tempDir(), `gate2.${helper}`);
    gate = await closedGate(gatePath);
    const first = spec(...sh(`trap '' TERM; (flock -s "$1" true; echo late) &`, gatePath), 1);
    p.spawn(first);
    await events.exit(first.uid);
    events.exited.delete(first.uid); // to await the second exit
    const second: SpawnSpec = { ...spec(...sh('echo second'), 2), uid: first.uid };
    p.spawn(second);
    expect((await events.exit(first.uid)).output?.stdout).toBe('second\n');
    await gate.open();
    const all = await frames.until(
      'both ends',
      (fr) => frames.of(first.uid, fr).filter((f) => f.kind === 'end').length === 2,
    );
    const text = (attempt: number): string =>
      Buffer.concat(
        frames
          .of(first.uid, all)
          .filter((f) => f.attempt === attempt && f.kind === 'stdout')
          .map((f) => f.data),
      ).toString();
    expect([text(1), text(2)]).toEqual(['late\n', 'second\n']);
  });

  it('frames a task killed mid-output up to its kill, then ends its output', async () => {
    const p = await start();
    const s = spec(...sh('i=0; while :; do i=$((i+1)); echo "line $i"; done'));
    p.spawn(s);
    await frames.until('some output', (fr) => frames.data(s.uid, 'stdout', fr).length > 0);
    p.kill(s.uid, 'SIGKILL');
    const exit = await events.exit(s.uid);
    expect(exit).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
    const all = await frames.untilEnded([s.uid]);
    const text = frames.data(s.uid, 'stdout', all).toString();
    expect(exit.output?.stdoutBytes).toBe(text.length);
    const lines = text.split('\n');
    const last = lines.pop()!; // a line cut by the kill, or ''
    expect(lines).toEqual(lines.map((_, i) => `line ${i + 1}`));
    expect(`line ${lines.length + 1}`.startsWith(last)).toBe(true);
    expect(frames.of(s.uid, all).at(-1)?.kind).toBe('end');
  });

  it('makes its stream files 0600 with the magic first, in a 0700 directory', async () => {
    const p = await start({ count: 2 });
    expect(modeOf(streamDir)).toBe(0o700);
    for (const file of p.streamFiles()) {
      expect(modeOf(file)).toBe(0o600);
      expect(fs.readFileSync(file)).toEqual(STREAM_MAGIC);
    }
  });

  it('gives a helper that replaces a dead one a file of its own', async () => {
    const p = await start();
    const s = spec('/bin/sleep', ['30']);
    p.spawn(s);
    process.kill(await helperOf(s), 'SIGKILL');
    expect((await events.failure(s.uid)).code).toBe('E_SPAWNER_DIED');
    const late = spec(...sh('echo late'));
    p.spawn(late);
    await events.exit(late.uid);
    expect(p.streamFiles()).toEqual(
      [0, 1].map((g) => path.join(streamDir, `spawner.0.${g}.pfout`)),
    );
    const [, second] = p.streamFiles();
    expect(decodeFrames(fs.readFileSync(second!), 0).frames[0]).toMatchObject({
      uid: late.uid,
      kind: 'stdout',
    });
  });

  /** The helper that runs `s` (its main process's parent). */
  async function helperOf(s: SpawnSpec): Promise<number> {
    const pid = await events.pid(s.uid);
    return Number(fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]);
  }

  it('ends every open output when closed: running tasks and what ended ones left', async () => {
    const p = await start({ killGraceMs: 60_000 });
    const running = spec(...sh('echo running; exec sleep 30'));
    const left = spec(...sh(`trap '' TERM; echo left; sleep 30 &`));
    p.spawn(running);
    p.spawn(left);
    await events.exit(left.uid);
    await frames.until('running', (fr) => frames.data(running.uid, 'stdout', fr).length > 0);
    await p.close();
    expect(events.exited.get(running.uid)).toMatchObject({ signal: 'SIGKILL' });
    const all = frames.all();
    for (const [s, text] of [
      [running, 'running\n'],
      [left, 'left\n'],
    ] as const) {
      expect(frames.data(s.uid, 'stdout', all).toString()).toBe(text);
      expect(frames.of(s.uid, all).filter((f) => f.kind === 'end')).toHaveLength(1);
    }
  });

  it('fails a stream spawn without a stream directory (EINVAL), and runs files spawns with one', async () => {
    let p = await start();
    const f = fileSpec(...sh('echo to a file'));
    p.spawn(f);
    expect(await events.exit(f.uid)).toEqual({ uid: f.uid, exitCode: 0, signal: null });
    expect(fs.readFileSync(f.stdoutPath, 'utf8')).toBe('to a file\n');
    expect(frames.of(f.uid)).toEqual([]);
    await p.close();
    events = new Events();
    p = pool = await SpawnerPool.start({
      count: 1,
      logger: silentLogger,
      handlers: events.handlers,
      helper,
    });
    const s = spec('/bin/true');
    p.spawn(s);
    expect(await events.failure(s.uid)).toEqual({
      uid: s.uid,
      code: 'EINVAL',
      message: "output 'stream' needs a helper started with --stream",
    });
  });
});

describeEachHelper('output stream, spoken to a helper directly', (helper: SpawnerHelper) => {
  let h: RawHelper | undefined;
  let dir: string;

  beforeAll(() => {
    dir = path.join(tempDir(), `raw.${helper}`);
    fs.mkdirSync(dir);
  });
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('appends to a stream file that has frames already, without a second magic', async () => {
    const file = path.join(dir, 'old.pfout');
    const old = encodeFrame('stdout', 'old', 1, Buffer.from('x'));
    fs.writeFileSync(file, Buffer.concat([STREAM_MAGIC, old]));
    h = await RawHelper.start(helper, ['--stream', file]);
    const s = streamSpec(dir, ...sh('echo new'), { attempt: 2 });
    h.send({ op: 'spawn', ...s });
    expect(await h.of('exited', s.uid)).toMatchObject({
      stdoutTail: Buffer.from('new\n').toString('base64'),
      stderrTail: '',
      stdoutBytes: 4,
      stderrBytes: 0,
    });
    const frames = new StreamFrames(dir, () => [file]);
    const all = await frames.untilEnded([s.uid]);
    expect(all.map((f) => [f.uid, f.kind, f.attempt, f.data.toString()])).toEqual([
      ['old', 'stdout', 1, 'x'],
      [s.uid, 'stdout', 2, 'new\n'],
      [s.uid, 'end', 2, ''],
    ]);
  });

  it('refuses stream requests with paths or without a whole attempt in [0, 2^32)', async () => {
    const file = path.join(dir, 'bad.pfout');
    h = await RawHelper.start(helper, ['--stream', file]);
    const base = { op: 'spawn', uid: 'x', executable: '/bin/true', args: [], env: {}, cwd: '/' };
    const bad = [
      { ...base, stream: { attempt: 1 }, stdoutPath: '/dev/null' },
      { ...base, stream: { attempt: 1 }, stderrPath: '/dev/null' },
      { ...base, stream: { attempt: -1 } },
      { ...base, stream: { attempt: 1.5 } },
      { ...base, stream: { attempt: 2 ** 32 } },
      { ...base, stream: { attempt: '1' } },
      { ...base, stream: {} },
      { ...base, stream: 1 },
    ];
    h.send(...bad);
    const ok = streamSpec(dir, '/bin/true', [], { attempt: 2 ** 32 - 1 });
    h.send({ op: 'spawn', ...ok });
    await h.of('exited', ok.uid);
    const errors = h.events.filter((e) => e.ev === 'error').map((e) => e.message);
    expect(errors).toEqual(bad.map((b) => `bad request: ${JSON.stringify(b).slice(0, 200)}`));
    const all = await new StreamFrames(dir, () => [file]).untilEnded([ok.uid]);
    expect(all).toEqual([
      { kind: 'end', uid: ok.uid, attempt: 2 ** 32 - 1, data: Buffer.alloc(0) },
    ]);
  });

  it('fails a stream spawn whose uid is too long for a frame (EINVAL)', async () => {
    h = await RawHelper.start(helper, ['--stream', path.join(dir, 'long.pfout')]);
    const s = { ...streamSpec(dir, '/bin/true'), uid: 'u'.repeat(0x10000) };
    h.send({ op: 'spawn', ...s });
    expect(await h.of('failed', s.uid)).toMatchObject({
      code: 'EINVAL',
      message: 'a uid of more than 65535 bytes does not fit in a stream frame',
    });
  });
});

describeEachHelper('a helper given a stream file it cannot open', (helper: SpawnerHelper) => {
  it('exits 66 and says why', () => {
    const { file, args } = spawnerCommand(helper);
    const stream = path.join(tempDir(), 'no-such-dir', 'x.pfout');
    const r = spawnSync(file, [...args, '--stream', stream], { input: '', encoding: 'utf8' });
    expect(r.status).toBe(66);
    expect(r.stderr).toContain(`cannot open the output stream '${stream}': `);
  });
});
