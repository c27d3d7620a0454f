import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { FileChannel, type FileChannelOptions } from '../../../src/agent/file-channel';
import { FileServer, type FileServerOptions } from '../../../src/client/file-server';
import { SessionSecurity } from '../../../src/client/session-security';
import { silentLogger } from '../../../src/lib/logger';
import * as zmq from 'zeromq';
import { withTimeout } from '../../../src/lib/deferred';
import { parseFileReply } from '../../../src/lib/validate';
import { decode, encode } from '../../../src/transport/codec';
import { clientOptions, newKeyPair, type ClientSecurity } from '../../../src/transport/curve';

const SESSION = 'session.transfer';
const PILOT = 'pilot.0000';
const TASK = 'task.000001';

const sha = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

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
});
