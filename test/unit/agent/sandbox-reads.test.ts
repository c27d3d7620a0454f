import { describe, expect, it } from '@jest/globals';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import {
  MAX_SANDBOX_READ_BYTES,
  SandboxReads,
  confine,
  pathOutside,
  writeSandboxToken,
} from '../../../src/agent/sandbox-reads';
import {
  SANDBOX_TOKEN,
  chooseFiles,
  localFiles,
  remoteFiles,
} from '../../../src/lib/sandbox-files';
import { parseSandboxReply } from '../../../src/lib/validate';
import { tempDirs } from '../../support/temp-dirs';

const temp = tempDirs('pf-sandbox-reads-');

describe('pathOutside (what the agent refuses before it looks)', () => {
  const box = '/s/pilot.0000';

  it.each([
    ['/s/pilot.0000', undefined],
    ['/s/pilot.0000/output/spawner.0.0.pfout', undefined],
    ['/s/pilot.0000/task.000001/stdout', undefined],
    ['s/pilot.0000/x', 'is not absolute'],
    ['/s/pilot.0000/../pilot.0001/x', "holds '.' or '..'"],
    ['/s/pilot.0000/./x', "holds '.' or '..'"],
    ['/s/pilot.0000/..', "holds '.' or '..'"],
    ['/s/pilot.0000//x', 'is not in normal form'],
    ['/s/pilot.0000/x/', 'is not in normal form'],
    ['/s/pilot.00001/x', 'is outside the sandbox /s/pilot.0000'],
    ['/etc/passwd', 'is outside the sandbox /s/pilot.0000'],
    ['/s', 'is outside the sandbox /s/pilot.0000'],
    ['/s/pilot.0000/a\0b', 'holds a NUL byte'],
  ])('%j: %s', (p, problem) => {
    expect(pathOutside(box, p)).toBe(problem);
  });
});

describe('confine (symlinks resolved)', () => {
  function sandbox(): { box: string; outside: string } {
    const root = temp.make();
    const box = path.join(root, 'box');
    mkdirSync(path.join(box, 'output'), { recursive: true });
    writeFileSync(path.join(box, 'output', 'a.pfout'), 'mine');
    writeFileSync(path.join(root, 'secret'), 'not yours');
    symlinkSync(path.join(root, 'secret'), path.join(box, 'out-link'));
    symlinkSync(root, path.join(box, 'up'));
    symlinkSync(path.join(box, 'output', 'a.pfout'), path.join(box, 'in-link'));
    return { box, outside: path.join(root, 'secret') };
  }

  it('gives the real path of a file inside, also through a link that stays inside', async () => {
    const { box } = sandbox();
    const real = path.join(box, 'output', 'a.pfout');
    await expect(confine(box, real)).resolves.toBe(real);
    await expect(confine(box, path.join(box, 'in-link'))).resolves.toBe(real);
  });

  it('refuses a link to a file or a directory out of the sandbox (EACCES)', async () => {
    const { box, outside } = sandbox();
    await expect(confine(box, path.join(box, 'out-link'))).rejects.toMatchObject({
      code: 'EACCES',
      message: expect.stringContaining(`leads out of the sandbox ${box} (to ${outside})`),
    });
    await expect(confine(box, path.join(box, 'up', 'secret'))).rejects.toMatchObject({
      code: 'EACCES',
    });
  });

  it('refuses a path outside before it looks, and says ENOENT of one not there', async () => {
    const { box, outside } = sandbox();
    await expect(confine(box, outside)).rejects.toMatchObject({ code: 'EACCES' });
    await expect(confine(box, path.join(box, 'nope'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('SandboxReads (the agent answers the client)', () => {
  const at = { session: 'pf.s', pilot: 'pilot.0000' };
  const ask = (reads: SandboxReads, body: Record<string, unknown>, req = 1) =>
    reads.answer({ ...at, req, ...body } as never).then((a) => {
      parseSandboxReply(a.header); // every answer is a valid reply
      return a;
    });

  function sandbox(): { box: string; reads: SandboxReads } {
    const box = temp.make();
    mkdirSync(path.join(box, 'output'));
    writeFileSync(path.join(box, 'output', 'a.pfout'), Buffer.alloc(MAX_SANDBOX_READ_BYTES + 10));
    writeFileSync(path.join(box, 'small'), 'hello');
    symlinkSync('/etc/passwd', path.join(box, 'passwd'));
    return { box, reads: new SandboxReads(box, at.session, at.pilot) };
  }

  it('serves stat, read and list inside the sandbox, naming session and pilot', async () => {
    const { box, reads } = sandbox();
    const small = path.join(box, 'small');
    expect((await ask(reads, { op: 'stat', path: small })).header).toEqual({
      ...at,
      req: 1,
      ok: true,
      size: 5,
    });
    const read = await ask(reads, { op: 'read', path: small, offset: 1, length: 3 }, 2);
    expect([read.header.size, read.data?.toString()]).toEqual([5, 'ell']);
    const list = await ask(reads, { op: 'list', path: path.join(box, 'output') });
    expect(list.header.names).toEqual(['a.pfout']);
  });

  it('bounds the bytes of a reply, and reads nothing past the end', async () => {
    const { box, reads } = sandbox();
    const big = path.join(box, 'output', 'a.pfout');
    const whole = await ask(reads, { op: 'read', path: big, offset: 0, length: 1048576 });
    expect(whole.data?.length).toBe(MAX_SANDBOX_READ_BYTES);
    const end = await ask(reads, { op: 'read', path: big, offset: MAX_SANDBOX_READ_BYTES + 10 });
    expect(end.data?.length).toBe(0);
  });

  it.each([
    ['a link out of the sandbox', (box: string) => path.join(box, 'passwd'), 'EACCES'],
    ['a path with ..', (box: string) => `${box}/output/../../x`, 'EACCES'],
    ['a path elsewhere', () => '/etc/passwd', 'EACCES'],
    ['a directory read as a file', (box: string) => path.join(box, 'output'), 'EISDIR'],
    ['a file not there', (box: string) => path.join(box, 'nope'), 'ENOENT'],
  ])('refuses %s (%s)', async (_what, p, code) => {
    const { box, reads } = sandbox();
    const a = await ask(reads, { op: 'read', path: p(box), offset: 0, length: 10 });
    expect(a.header).toMatchObject({ ok: false, error: { code } });
    expect(a.data).toBeUndefined();
  });

  it('refuses a request naming another session or pilot', async () => {
    const { box, reads } = sandbox();
    const a = await reads.answer({ ...at, pilot: 'pilot.0001', req: 3, op: 'stat', path: box });
    expect(a.header).toMatchObject({ ok: false, error: { code: 'EACCES' } });
  });
});

describe('chooseFiles (does this machine see the agent’s sandbox?)', () => {
  it('reads here when the token here is the one the agent serves, else through the agent', async () => {
    const box = temp.make();
    expect(writeSandboxToken(box)).toBeUndefined();
    const reads = new SandboxReads(box, 'pf.s', 'pilot.0000');
    const agent = remoteFiles(async (body) => {
      const a = await reads.answer({ session: 'pf.s', pilot: 'pilot.0000', req: 0, ...body });
      if (!a.header.ok) throw Object.assign(new Error(a.header.error!.message), a.header.error);
      return { size: a.header.size, names: a.header.names, data: a.data };
    });
    expect(await chooseFiles(box, agent)).toBe(localFiles);
    // an empty directory of the same name here (another node's disk): the token differs
    const other = temp.make();
    writeFileSync(path.join(other, SANDBOX_TOKEN), 'another');
    const elsewhere = remoteFiles(async (body) => {
      const p = body.path.replace(other, box);
      const a = await reads.answer({
        session: 'pf.s',
        pilot: 'pilot.0000',
        req: 0,
        ...body,
        path: p,
      });
      if (!a.header.ok) throw Object.assign(new Error(a.header.error!.message), a.header.error);
      return { size: a.header.size, names: a.header.names, data: a.data };
    });
    expect(await chooseFiles(other, elsewhere)).toBe(elsewhere);
    // no agent answers: this machine's files where it sees a sandbox (a token, or anything in
    // it: a sandbox older than tokens), not an empty directory (a mount over it), nor none
    expect(await chooseFiles(other, undefined)).toBe(localFiles);
    const old = temp.make();
    writeFileSync(path.join(old, 'agent.log'), '');
    expect(await chooseFiles(old, undefined)).toBe(localFiles);
    expect(await chooseFiles(temp.make(), undefined)).toBeUndefined();
    expect(await chooseFiles(path.join(other, 'gone'), undefined)).toBeUndefined();
  });
});
