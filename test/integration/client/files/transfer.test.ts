import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { FileChannel, type FileChannelOptions } from '../../../../src/agent/file-channel';
import { FileServer, type FileServerOptions } from '../../../../src/client/files/server';
import type {
  TransferProgress,
  TransferSubject,
} from '../../../../src/client/files/transfer-progress';
import type { Logger } from '../../../../src/lib/logger';
import { FakeClock } from '../../../support/fake-clock';
import { SessionSecurity } from '../../../../src/client/pilots/session-security';
import { silentLogger } from '../../../../src/lib/logger';
import * as zmq from 'zeromq';
import { withTimeout } from '../../../../src/lib/deferred';
import { parseFileReply } from '../../../../src/lib/validate';
import { decode, encode } from '../../../../src/transport/codec';
import { clientOptions, newKeyPair, type ClientSecurity } from '../../../../src/transport/curve';

const SESSION = 'session.transfer';
const PILOT = 'pilot.0000';
const TASK = 'task.000001';

const sha = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

/** A task record with one transfer directive each way (`in`: client -> pilot, `out` back). */
const subject = (into: string, back: string, attempt = 1): TransferSubject => ({
  attempt,
  description: {
    inputStaging: [{ source: `client://${into}`, target: 'task://', action: 'transfer' }],
    outputStaging: [{ source: 'task://r', target: `client://${back}`, action: 'transfer' }],
  },
  staging: {
    input: [{ source: into, target: 'task://', action: 'transfer' }],
    output: [{ source: 'task://r', target: back, action: 'transfer' }],
  },
});

/**
 * Checks one transfer's events: a start at 0, progress rising, done at the total; and, given
 * `everyMs`, progress events at least that far apart (as `at` says).
 */
function expectWellTold(
  events: { e: TransferProgress; at: number }[],
  total: number,
  everyMs = 0,
): void {
  expect(events[0]!.e).toMatchObject({ phase: 'start', bytesDone: 0, bytesTotal: total });
  expect(events[events.length - 1]!.e).toMatchObject({ phase: 'done', bytesDone: total });
  for (const { e } of events.slice(1, -1)) expect(e.phase).toBe('progress');
  for (let i = 1; i < events.length; i++) {
    expect(events[i]!.e.bytesDone).toBeGreaterThan(events[i - 1]!.e.bytesDone);
    expect(events[i]!.e.bytesTotal).toBe(total);
    if (i < events.length - 1) {
      expect(events[i]!.at - events[i - 1]!.at).toBeGreaterThanOrEqual(everyMs);
    }
  }
}

/** The files of `dir` whose name says they are a transfer's temporary file. */
const temporaries = (dir: string): string[] =>
  fs.readdirSync(dir).filter((f) => f.startsWith('.pf-') && f.endsWith('.part'));

describe('file channel (transfer staging action)', () => {
  let dir: string;
  let client: string;
  let node: string;
  let security: SessionSecurity;
  let agentKeys: ClientSecurity;
  let server: FileServer;
  let address: string;
  const channels: FileChannel[] = [];

  const startServer = async (opts: Partial<FileServerOptions> = {}): Promise<void> => {
    server = new FileServer({ session: SESSION, log: silentLogger, ...opts });
    address = await server.listen(PILOT, 'tcp://127.0.0.1:0', security.forPilot(PILOT));
  };

  const channel = (opts: Partial<FileChannelOptions> = {}): FileChannel => {
    const c = new FileChannel({
      address,
      security: agentKeys,
      session: SESSION,
      pilot: PILOT,
      log: silentLogger,
      timeoutMs: 5_000,
      ...opts,
    });
    channels.push(c);
    return c;
  };

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-transfer-'));
    client = path.join(dir, 'client');
    node = path.join(dir, 'node');
    fs.mkdirSync(client);
    fs.mkdirSync(node);
    security = await SessionSecurity.open(SESSION, dir, silentLogger);
    agentKeys = security.client(security.issue(PILOT));
    await startServer();
  });

  afterEach(async () => {
    for (const c of channels.splice(0)) await c.close();
    await server.close();
    await security.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('fetches a client file and sends one back, checksummed, private, in place', async () => {
    const data = Buffer.from('hello from the client\n'.repeat(1000));
    const src = path.join(client, 'in.txt');
    const back = path.join(client, 'out.txt');
    fs.writeFileSync(src, data);
    server.allow(PILOT, TASK, { read: [src], write: [back] });
    const files = channel({ chunkBytes: 4096 });

    const local = path.join(node, 'in.txt');
    await expect(files.fetch(TASK, src, local)).resolves.toEqual({
      bytes: data.length,
      sha256: sha(data),
    });
    expect(fs.readFileSync(local)).toEqual(data);
    expect(fs.statSync(local).mode & 0o777).toBe(0o600);

    await expect(files.send(TASK, local, back)).resolves.toEqual({
      bytes: data.length,
      sha256: sha(data),
    });
    expect(fs.readFileSync(back)).toEqual(data);
    expect(fs.statSync(back).mode & 0o777).toBe(0o600);
    expect([...temporaries(client), ...temporaries(node)]).toEqual([]);
  });

  it('moves empty files both ways', async () => {
    const src = path.join(client, 'empty');
    const back = path.join(client, 'empty.back');
    fs.writeFileSync(src, '');
    server.allow(PILOT, TASK, { read: [src], write: [back] });
    const files = channel();
    const empty = { bytes: 0, sha256: sha('') };
    await expect(files.fetch(TASK, src, path.join(node, 'empty'))).resolves.toEqual(empty);
    await expect(files.send(TASK, path.join(node, 'empty'), back)).resolves.toEqual(empty);
    expect(fs.statSync(back).size).toBe(0);
  });

  it('keeps the owner-executable bit of a fetched script', async () => {
    const src = path.join(client, 'run.sh');
    fs.writeFileSync(src, '#!/bin/sh\n', { mode: 0o755 });
    server.allow(PILOT, TASK, { read: [src] });
    await channel().fetch(TASK, src, path.join(node, 'run.sh'));
    expect(fs.statSync(path.join(node, 'run.sh')).mode & 0o777).toBe(0o700);
  });

  it('fails with ENOENT naming a missing client file, and leaves nothing behind', async () => {
    const src = path.join(client, 'missing');
    server.allow(PILOT, TASK, { read: [src] });
    const err = await channel()
      .fetch(TASK, src, path.join(node, 'missing'))
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'ENOENT', message: expect.stringContaining(src) });
    expect(fs.readdirSync(node)).toEqual([]);
  });

  it('fails with ENOENT naming a missing local file or directory', async () => {
    const back = path.join(client, 'back');
    const src = path.join(client, 'src');
    fs.writeFileSync(src, 'x');
    server.allow(PILOT, TASK, { read: [src], write: [back] });
    const files = channel();
    const gone = path.join(node, 'nothing');
    await expect(files.send(TASK, gone, back)).rejects.toMatchObject({
      code: 'ENOENT',
      message: expect.stringContaining(gone),
    });
    const into = path.join(node, 'no-dir', 'src');
    await expect(files.fetch(TASK, src, into)).rejects.toMatchObject({
      code: 'ENOENT',
      message: expect.stringContaining(into),
    });
    expect(server.refused).toBe(0);
  });

  it('refuses paths the task was not allowed, `..` games included, and counts them', async () => {
    const src = path.join(client, 'allowed');
    const secret = path.join(client, 'secret');
    fs.writeFileSync(src, 'ok');
    fs.writeFileSync(secret, 'no');
    server.allow(PILOT, TASK, { read: [src], write: [path.join(client, 'result')] });
    const files = channel();
    const local = path.join(node, 'x');
    for (const asked of [secret, `${client}/allowed/../secret`, `${client}//secret`]) {
      await expect(files.fetch(TASK, asked, local)).rejects.toMatchObject({
        code: 'EACCES',
        message: expect.stringContaining(secret),
      });
    }
    // allowed for reading is not allowed for writing, nor for another task
    fs.writeFileSync(local, 'overwrite');
    await expect(files.send(TASK, local, src)).rejects.toMatchObject({ code: 'EACCES' });
    await expect(files.fetch('task.other', src, local)).rejects.toMatchObject({ code: 'EACCES' });
    await expect(files.fetch(TASK, 'relative/path', local)).rejects.toMatchObject({
      code: 'EINVAL',
    });
    expect(fs.readFileSync(src, 'utf8')).toBe('ok');
    expect(server.refused).toBe(5);

    // once the task's grant is taken back, nothing of it is served
    server.forget(PILOT, TASK);
    await expect(files.fetch(TASK, src, local)).rejects.toMatchObject({ code: 'EACCES' });
  });

  it('refuses a request that names another session or pilot', async () => {
    const src = path.join(client, 'f');
    fs.writeFileSync(src, 'x');
    server.allow(PILOT, TASK, { read: [src] });
    server.allow('pilot.0001', TASK, { read: [src] });
    const local = path.join(node, 'f');
    await expect(channel({ session: 'another' }).fetch(TASK, src, local)).rejects.toMatchObject({
      code: 'EACCES',
      message: expect.stringContaining("'another'"),
    });
    await expect(channel({ pilot: 'pilot.0001' }).fetch(TASK, src, local)).rejects.toMatchObject({
      code: 'EACCES',
      message: expect.stringContaining('pilot.0001'),
    });
    expect(server.refused).toBe(2);
  });

  it('answers malformed requests with an error where it can, and counts them all', async () => {
    const src = path.join(client, 'f');
    fs.writeFileSync(src, 'x');
    server.allow(PILOT, TASK, { read: [src] });
    const raw = new zmq.Dealer({ linger: 0, ...clientOptions(agentKeys) });
    raw.connect(address);
    try {
      const ask = async (frames: Buffer[]) => {
        await raw.send(frames);
        const [h] = await withTimeout(raw.receive(), 5_000, 'file reply');
        return parseFileReply(decode(h!));
      };
      const base = { session: SESSION, pilot: PILOT, task: TASK, transfer: 'x1' };
      // garbage and a request with no number get no answer; the next one does
      await raw.send(Buffer.from([0xc1, 0xff, 0x00]));
      await raw.send(encode({ op: 'open_read' }));
      await expect(ask([encode({ ...base, op: 'open_read', req: 1, path: 5 })])).resolves.toEqual({
        req: 1,
        ok: false,
        error: { code: 'E_TRANSFER', message: expect.stringMatching(/\/path must be string/) },
      });
      await expect(
        ask([encode({ ...base, op: 'open_read', req: 2, path: src }), Buffer.from('bytes')]),
      ).resolves.toMatchObject({ req: 2, ok: false, error: { code: 'EACCES' } });
      await expect(ask([encode({ ...base, op: 'open_read', req: 3, path: src })])).resolves.toEqual(
        { req: 3, ok: true, size: 1, mode: expect.any(Number) },
      );
      // a chunk out of order fails the transfer (not a refusal: the request was its own)
      await expect(
        ask([encode({ ...base, op: 'read', req: 4, offset: 1, length: 1 })]),
      ).resolves.toMatchObject({ ok: false, error: { code: 'E_TRANSFER' } });
      expect(server.refused).toBe(4);
    } finally {
      raw.close();
    }
  });

  it('admits only the pilot key: another key gets no answer, and fails in bounded time', async () => {
    const src = path.join(client, 'f');
    fs.writeFileSync(src, 'x');
    server.allow(PILOT, TASK, { read: [src] });
    const stranger = { serverKey: agentKeys.serverKey, ...newKeyPair() };
    const t0 = Date.now();
    const err = await channel({ security: stranger, timeoutMs: 1_000 })
      .fetch(TASK, src, path.join(node, 'f'))
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'E_TRANSFER', message: expect.stringContaining(src) });
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(security.refused()).toBeGreaterThan(0);
  });

  it('detects a chunk changed on the way to the agent (checksum)', async () => {
    await server.close();
    let flipped = false;
    await startServer({
      servedHook: (chunk) => {
        if (flipped) return;
        flipped = true;
        chunk.writeUInt8(chunk.readUInt8(0) ^ 0xff, 0);
      },
    });
    const src = path.join(client, 'data');
    fs.writeFileSync(src, Buffer.alloc(100_000, 7));
    server.allow(PILOT, TASK, { read: [src] });
    const local = path.join(node, 'data');
    await expect(channel({ chunkBytes: 16_384 }).fetch(TASK, src, local)).rejects.toMatchObject({
      code: 'E_TRANSFER',
      message: expect.stringMatching(/checksum mismatch/),
    });
    expect(fs.readdirSync(node)).toEqual([]);
  });

  it('detects a chunk changed on the way to the client, and writes nothing there', async () => {
    const local = path.join(node, 'data');
    const back = path.join(client, 'back');
    fs.writeFileSync(local, Buffer.alloc(100_000, 9));
    server.allow(PILOT, TASK, { write: [back] });
    let flipped = false;
    const files = channel({
      chunkBytes: 16_384,
      sentHook: (chunk) => {
        if (!flipped) chunk.writeUInt8(chunk.readUInt8(5) ^ 1, 5);
        flipped = true;
      },
    });
    await expect(files.send(TASK, local, back)).rejects.toMatchObject({
      code: 'E_TRANSFER',
      message: expect.stringMatching(new RegExp(`${back}.*checksum mismatch`)),
    });
    expect(fs.readdirSync(client)).toEqual([]);
  });

  it('fails a fetch whose client file changes while it is read', async () => {
    const src = path.join(client, 'growing');
    fs.writeFileSync(src, Buffer.alloc(200_000, 1));
    await server.close();
    await startServer({ servedHook: () => fs.appendFileSync(src, 'more') });
    server.allow(PILOT, TASK, { read: [src] });
    await expect(
      channel({ chunkBytes: 65_536 }).fetch(TASK, src, path.join(node, 'growing')),
    ).rejects.toMatchObject({ code: 'E_TRANSFER', message: expect.stringMatching(/changed/) });
    expect(fs.readdirSync(node)).toEqual([]);
  });

  it('replaces a symbolic link at the target instead of writing through it', async () => {
    const victim = path.join(client, 'victim');
    const target = path.join(client, 'target');
    fs.writeFileSync(victim, 'untouched');
    fs.symlinkSync(victim, target);
    const local = path.join(node, 'f');
    fs.writeFileSync(local, 'new');
    server.allow(PILOT, TASK, { write: [target] });
    await channel().send(TASK, local, target);
    expect(fs.lstatSync(target).isSymbolicLink()).toBe(false);
    expect(fs.readFileSync(target, 'utf8')).toBe('new');
    expect(fs.readFileSync(victim, 'utf8')).toBe('untouched');
  });

  it('refuses to serve a directory, or to write over one', async () => {
    const sub = path.join(client, 'sub');
    fs.mkdirSync(sub);
    const local = path.join(node, 'f');
    fs.writeFileSync(local, 'x');
    server.allow(PILOT, TASK, { read: [sub], write: [sub] });
    const files = channel();
    await expect(files.fetch(TASK, sub, path.join(node, 'sub'))).rejects.toMatchObject({
      code: 'EISDIR',
    });
    await expect(files.send(TASK, local, sub)).rejects.toMatchObject({ code: 'EISDIR' });
  });

  it('fails with E_TRANSFER within its timeout when the client goes away mid-transfer', async () => {
    const src = path.join(client, 'big');
    fs.writeFileSync(src, Buffer.alloc(4 * 2 ** 20, 3));
    await server.close();
    let closing: Promise<void> | undefined;
    await startServer({ servedHook: () => void (closing ??= server.close()) });
    server.allow(PILOT, TASK, { read: [src] });
    const t0 = Date.now();
    const err = await channel({ chunkBytes: 65_536, timeoutMs: 1_500 })
      .fetch(TASK, src, path.join(node, 'big'))
      .catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: 'E_TRANSFER',
      message: expect.stringMatching(new RegExp(`${src}.*no answer from the client within 1500`)),
    });
    expect(Date.now() - t0).toBeLessThan(6_000);
    await closing;
    expect(fs.readdirSync(node)).toEqual([]);
  });

  it('tells progress: first 0, last the total, rising, throttled', async () => {
    const src = path.join(client, 'p');
    fs.writeFileSync(src, Buffer.alloc(3 * 2 ** 20, 5));
    server.allow(PILOT, TASK, { read: [src] });
    const files = channel({ chunkBytes: 65_536 });
    const seen: [string, number, number][] = [];
    files.onProgress((task, done, total) => seen.push([task, done, total]));
    await files.fetch(TASK, src, path.join(node, 'p'));
    const total = 3 * 2 ** 20;
    expect(seen[0]).toEqual([TASK, 0, total]);
    expect(seen[seen.length - 1]).toEqual([TASK, total, total]);
    expect(seen.length).toBeLessThanOrEqual(101);
    for (let i = 1; i < seen.length; i++) expect(seen[i]![1]).toBeGreaterThan(seen[i - 1]![1]);
  });

  it('runs several transfers of a pilot at once over one connection', async () => {
    const srcs = [0, 1, 2, 3].map((i) => path.join(client, `s${i}`));
    srcs.forEach((s, i) => fs.writeFileSync(s, Buffer.alloc(300_000 + i, i)));
    server.allow(PILOT, TASK, { read: srcs });
    const files = channel({ chunkBytes: 32_768 });
    const results = await Promise.all(
      srcs.map((s, i) => files.fetch(TASK, s, path.join(node, `s${i}`))),
    );
    results.forEach((r, i) => expect(r.sha256).toBe(sha(fs.readFileSync(srcs[i]!))));
  });
  describe('progress told to the client', () => {
    const MiB = 2 ** 20;
    let clock: FakeClock;
    let events: { e: TransferProgress; at: number }[];

    /** A server on a clock that `tick` moves; every event it tells is kept with its time. */
    const watched = async (opts: Partial<FileServerOptions> = {}): Promise<void> => {
      await server.close();
      clock = new FakeClock();
      events = [];
      await startServer({ clock, ...opts });
      server.onProgress((e) => events.push({ e, at: clock.now() }));
    };

    it('tells each transfer of a directive: start, progress at most every 250 ms, done', async () => {
      // each chunk served or sent moves the server's clock 100 ms: progress about every third
      await watched({ servedHook: () => clock.advance(100) });
      const src = path.join(client, 'big.in');
      const back = path.join(client, 'big.out');
      fs.writeFileSync(src, Buffer.alloc(3 * MiB, 1));
      server.allow(PILOT, TASK, { read: [src], write: [back] }, subject(src, back, 2));
      const files = channel({ chunkBytes: 64 * 1024, sentHook: () => clock.advance(100) });
      const local = path.join(node, 'big');

      await files.fetch(TASK, src, local);
      const fetched = events.splice(0);
      expectWellTold(fetched, 3 * MiB, 250);
      // 48 chunks, told about every third: throttled, yet told as it goes
      expect(fetched.length).toBeGreaterThanOrEqual(10);
      expect(fetched.length).toBeLessThanOrEqual(19);
      expect(fetched[0]!.e).toEqual({
        task: TASK,
        attempt: 2,
        pilot: PILOT,
        direction: 'in',
        index: 0,
        source: `client://${src}`,
        target: 'task://',
        phase: 'start',
        bytesDone: 0,
        bytesTotal: 3 * MiB,
      });

      await files.send(TASK, local, back);
      const sent = events.splice(0);
      // the agent moves the clock as it sends, up to a window of chunks before the server
      // takes them: not as exact as the fetch, yet as bounded
      expectWellTold(sent, 3 * MiB);
      expect(sent.length).toBeGreaterThanOrEqual(3);
      expect(sent.length).toBeLessThanOrEqual(24);
      for (const { e } of sent) {
        expect(e).toMatchObject({ direction: 'out', index: 0, source: 'task://r', attempt: 2 });
        expect(e.target).toBe(`client://${back}`);
      }
      expect(fs.readFileSync(back).equals(fs.readFileSync(src))).toBe(true);
    });

    it('tells a transfer that cannot open its client file as failed, with the errno', async () => {
      await watched();
      const src = path.join(client, 'missing');
      server.allow(PILOT, TASK, { read: [src] }, subject(src, path.join(client, 'x')));
      await expect(channel().fetch(TASK, src, path.join(node, 'm'))).rejects.toMatchObject({
        code: 'ENOENT',
      });
      expect(events.map(({ e }) => e)).toEqual([
        expect.objectContaining({
          phase: 'failed',
          direction: 'in',
          index: 0,
          bytesDone: 0,
          bytesTotal: 0,
          error: { code: 'ENOENT', message: expect.stringContaining(src) },
        }),
      ]);
    });

    it('ends a fetch whose checksum differs on the agent with failed, not done', async () => {
      let flipped = false;
      await watched({
        servedHook: (chunk) => {
          if (!flipped) chunk.writeUInt8(chunk.readUInt8(0) ^ 0xff, 0);
          flipped = true;
        },
      });
      const src = path.join(client, 'data');
      fs.writeFileSync(src, Buffer.alloc(100_000, 7));
      server.allow(PILOT, TASK, { read: [src] }, subject(src, path.join(client, 'x')));
      await expect(
        channel({ chunkBytes: 16_384 }).fetch(TASK, src, path.join(node, 'data')),
      ).rejects.toMatchObject({ code: 'E_TRANSFER', message: /checksum mismatch/ });
      const phases = events.map(({ e }) => e.phase);
      expect(phases[0]).toBe('start');
      expect(phases.slice(1, -1).every((p) => p === 'progress')).toBe(true);
      expect(events[events.length - 1]!.e).toMatchObject({
        phase: 'failed',
        bytesDone: 100_000,
        error: { code: 'E_TRANSFER', message: expect.stringMatching(/checksum mismatch/) },
      });
      expect(phases).not.toContain('done');
    });

    it('ends a send whose checksum differs on the client with failed', async () => {
      await watched();
      const local = path.join(node, 'data');
      const back = path.join(client, 'back');
      fs.writeFileSync(local, Buffer.alloc(100_000, 9));
      server.allow(PILOT, TASK, { write: [back] }, subject(path.join(client, 'x'), back));
      let flipped = false;
      const files = channel({
        chunkBytes: 16_384,
        sentHook: (chunk) => {
          if (!flipped) chunk.writeUInt8(chunk.readUInt8(5) ^ 1, 5);
          flipped = true;
        },
      });
      await expect(files.send(TASK, local, back)).rejects.toMatchObject({ code: 'E_TRANSFER' });
      expect(events.map(({ e }) => [e.phase, e.direction])).toEqual([
        ['start', 'out'],
        ['failed', 'out'],
      ]);
      expect(events[1]!.e.error?.message).toMatch(/checksum mismatch/);
    });

    it('ends a transfer the agent gives up, or the session drops, with failed', async () => {
      await watched();
      const src = path.join(client, 'f');
      fs.writeFileSync(src, Buffer.alloc(10_000, 2));
      server.allow(PILOT, TASK, { read: [src] }, subject(src, path.join(client, 'x')));
      // the agent cannot write where it fetches to: it opened the client file, then aborts
      const into = path.join(node, 'no-dir', 'f');
      await expect(channel().fetch(TASK, src, into)).rejects.toMatchObject({ code: 'ENOENT' });
      await withTimeout(
        new Promise<void>((resolve) => {
          if (events.length === 2) resolve();
          server.onProgress(() => events.length === 2 && resolve());
        }),
        5_000,
        'the failed event',
      );
      expect(events.map(({ e }) => [e.phase, e.error?.message])).toEqual([
        ['start', undefined],
        ['failed', 'the agent abandoned the transfer'],
      ]);
    });

    it('keeps transferring when a listener throws, and logs it', async () => {
      const logged: string[] = [];
      const log: Logger = {
        ...silentLogger,
        error: (m) => void logged.push(m),
        child: () => log,
      };
      await watched({ log });
      server.onProgress(() => {
        throw new Error('a bad listener');
      });
      const src = path.join(client, 'f');
      fs.writeFileSync(src, 'bytes');
      server.allow(PILOT, TASK, { read: [src] }, subject(src, path.join(client, 'x')));
      await channel().fetch(TASK, src, path.join(node, 'f'));
      expect(fs.readFileSync(path.join(node, 'f'), 'utf8')).toBe('bytes');
      expect(events.map(({ e }) => e.phase)).toEqual(['start', 'done']);
      expect(logged).toEqual(['user callback threw', 'user callback threw']);
    });
  });
});
