import { describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { runCli as run, startCli } from '../../support/cli';
import { filesHolding } from '../../support/secrets';
import { tempDirs } from '../../support/temp-dirs';

// `pilotfish run` with a MongoDB store no server answers (nothing listens on 127.0.0.1:1).

const PASSWORD = 'secret-7Qz';
const URI = `mongodb://u:${PASSWORD}@127.0.0.1:1/x?serverSelectionTimeoutMS=500`;
const WORKLOAD = {
  pilots: [{ resource: 'local', cores: 1 }],
  tasks: [{ executable: '/bin/true' }],
};

describe('pilotfish run --store', () => {
  const temp = tempDirs('pf-cli-store-');

  /** A workload file in a fresh directory, and where sessions would go. */
  function setup(extra: object = {}): { root: string; file: string; sessions: string } {
    const root = temp.make();
    const file = path.join(root, 'workload.json');
    writeFileSync(file, JSON.stringify({ ...WORKLOAD, ...extra }));
    return { root, file, sessions: path.join(root, 'sessions') };
  }

  /** No session directory was made (the sessions directory is absent or empty). */
  function noSession(sessions: string): void {
    expect(existsSync(sessions) ? readdirSync(sessions) : []).toEqual([]);
  }

  it('fails (1) naming the host and the reason, never the password, and leaves no session', async () => {
    const { root, file, sessions } = setup();
    const r = await run(['run', '--store', URI, '--dir', sessions, file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot reach MongoDB at 127\.0\.0\.1:1: .*ECONNREFUSED/);
    expect(r.stdout + r.stderr).not.toContain('secret');
    noSession(sessions);
    expect(filesHolding(root, PASSWORD)).toEqual([]);
  }, 20_000);

  it('takes the store from PILOTFISH_STORE and from the workload file alike', async () => {
    const env = setup();
    const viaEnv = await startCli(['run', '--dir', env.sessions, env.file], {
      ...process.env,
      PILOTFISH_STORE: URI,
    }).result;
    expect([viaEnv.code, viaEnv.stderr]).toEqual([1, expect.stringContaining('127.0.0.1:1')]);
    expect(viaEnv.stdout + viaEnv.stderr).not.toContain('secret');
    noSession(env.sessions);

    const inFile = setup({ store: URI });
    const viaFile = await run(['run', '--dir', inFile.sessions, inFile.file]);
    expect([viaFile.code, viaFile.stderr]).toEqual([1, expect.stringContaining('127.0.0.1:1')]);
    expect(viaFile.stdout + viaFile.stderr).not.toContain('secret');
    noSession(inFile.sessions);
  }, 20_000);

  it('calls a store that is not one a usage error (2) naming /store', async () => {
    const { file, sessions } = setup();
    const r = await run(['run', '--store', 'nonsense', '--dir', sessions, file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('/store');
    noSession(sessions);
  });

  it('calls a MongoDB URI the driver cannot read a usage error (2), without its password', async () => {
    const { file, sessions } = setup();
    for (const uri of ['mongodb://', `mongodb://u:${PASSWORD}@h:notaport/x`]) {
      const r = await run(['run', '--store', uri, '--dir', sessions, file]);
      expect([uri, r.code]).toEqual([uri, 2]);
      expect(r.stderr).toMatch(/^pilotfish: store: /);
      expect(r.stderr).not.toContain('secret');
    }
    noSession(sessions);
  });

  it('--resume of a session not here asks its MongoDB store for it (1 when none answers), else says there is none (2)', async () => {
    const { root, sessions } = setup();
    const uid = 'pf.20261124.101010.abcdef';
    const r = await run(['run', '--resume', uid, '--store', URI, '--dir', sessions]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot reach MongoDB at 127\.0\.0\.1:1: .*ECONNREFUSED/);
    expect(r.stdout + r.stderr).not.toContain('secret');
    noSession(sessions);
    expect(filesHolding(root, PASSWORD)).toEqual([]);
    const embedded = await run(['run', '--resume', uid, '--dir', sessions]);
    expect(embedded.code).toBe(2);
    expect(embedded.stderr).toContain(`no session '${uid}'`);
  }, 20_000);
});
