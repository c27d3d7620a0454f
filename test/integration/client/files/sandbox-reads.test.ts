import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { FileChannel } from '../../../../src/agent/file-channel';
import { FileServer } from '../../../../src/client/files/server';
import { SessionSecurity } from '../../../../src/client/pilots/session-security';
import { FileLines } from '../../../../src/lib/file-lines';
import { silentLogger } from '../../../../src/lib/logger';
import { SANDBOX_TOKEN, chooseFiles } from '../../../../src/lib/sandbox-files';
import { tempDirs } from '../../../support/temp-dirs';

const SESSION = 'session.sandbox';
const PILOT = 'pilot.0000';

/**
 * The client's looks into an agent's sandbox over the real file channel (CurveZMQ, the
 * pilot's own socket): the wire of output over the session.
 */
describe('sandbox reads over the file channel', () => {
  const temp = tempDirs('pf-sandbox-wire-');
  let security: SessionSecurity;
  let server: FileServer;
  let channel: FileChannel | undefined;
  let box: string;

  beforeEach(async () => {
    const dir = temp.make();
    box = path.join(dir, 'node', 'pilot.0000');
    fs.mkdirSync(path.join(box, 'output'), { recursive: true });
    security = await SessionSecurity.open(SESSION, dir, silentLogger);
    server = new FileServer({ session: SESSION, log: silentLogger });
  });

  afterEach(async () => {
    await channel?.close();
    channel = undefined;
    await server.close();
    await security.close();
  });

  /** The agent of PILOT, connected: a transfer's round trip proves it. */
  async function agent(): Promise<void> {
    const address = await server.listen(PILOT, 'tcp://127.0.0.1:0', security.forPilot(PILOT));
    channel = new FileChannel({
      address,
      security: security.client(security.issue(PILOT)),
      session: SESSION,
      pilot: PILOT,
      sandbox: box,
      log: silentLogger,
      timeoutMs: 5_000,
    });
    const probe = path.join(temp.make(), 'probe');
    fs.writeFileSync(probe, 'x');
    server.allow(PILOT, 'task.probe', { read: [probe], write: [] });
    await channel.fetch('task.probe', probe, path.join(box, 'probe'));
  }

  it("reads a file in the agent's sandbox as output readers do, and lists a directory", async () => {
    fs.writeFileSync(path.join(box, 'stdout'), 'one\ntwo\nthr');
    await agent();
    const files = server.sandbox.files(PILOT);
    const lines = new FileLines(path.join(box, 'stdout'), files);
    expect(await lines.read()).toEqual(['one', 'two']);
    fs.appendFileSync(path.join(box, 'stdout'), 'ee\n');
    expect(await lines.more()).toBe(true);
    expect(await lines.read()).toEqual(['three']);
    await lines.close();
    expect((await files.list(box)).sort()).toEqual([SANDBOX_TOKEN, 'output', 'probe', 'stdout']);
    expect(await files.exists(path.join(box, 'nope'))).toBe(false);
  });

  it('is refused outside the sandbox, through a link out of it, with the errno', async () => {
    const secret = path.join(temp.make(), 'secret');
    fs.writeFileSync(secret, 'not yours');
    fs.symlinkSync(secret, path.join(box, 'link'));
    await agent();
    const files = server.sandbox.files(PILOT);
    await expect(files.open(secret)).rejects.toMatchObject({ code: 'EACCES' });
    await expect(files.open(path.join(box, 'link'))).rejects.toMatchObject({ code: 'EACCES' });
    await expect(files.list(`${box}/..`)).rejects.toMatchObject({ code: 'EACCES' });
    await expect(files.open(path.join(box, 'nope'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('finds that a client on the same file system sees the sandbox itself (the token)', async () => {
    await agent();
    expect((await chooseFiles(box, server.sandbox.files(PILOT)))?.kind).toBe('local');
  });

  it('fails at once, EHOSTUNREACH, for a pilot whose agent is not connected', async () => {
    await server.listen(PILOT, 'tcp://127.0.0.1:0', security.forPilot(PILOT));
    await expect(server.sandbox.files(PILOT).list(box)).rejects.toMatchObject({
      code: 'EHOSTUNREACH',
    });
    await expect(server.sandbox.files('pilot.0009').list(box)).rejects.toMatchObject({
      code: 'EHOSTUNREACH',
    });
  });
});
