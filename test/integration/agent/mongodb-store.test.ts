import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { cwdOnlyLookup } from '../../../src/components/manager-input-stager/resolve';
import type { PilotRecord } from '../../../src/components/pilot-launcher/pilot-record';
import { PilotLauncherShell } from '../../../src/components/pilot-launcher/shell';
import { ManagerPipeline } from '../../../src/client/pipeline/manager-pipeline';
import { PilotLinks } from '../../../src/client/pilots/links';
import { openSessionControl } from '../../../src/client/pilots/session-control';
import type { AgentConfig, Reason } from '../../../src/generated';
import { systemClock } from '../../../src/lib/clock';
import { withTimeout } from '../../../src/lib/deferred';
import { silentLogger } from '../../../src/lib/logger';
import { storeChoiceOf } from '../../../src/updater/store-choice';
import { filesHolding } from '../../support/secrets';

// The agent of a session whose store is MongoDB, started as a client starts it: PilotLinks
// gives the bootstrap config its addresses and the session's MongoDB (as the ClientRuntime
// builds it, from the session's store choice), the PilotLauncherShell launches the pilot with
// the LocalLauncher, which writes the bootstrap file and starts dist/src/agent/main.js. No
// server listens on 127.0.0.1:1: the agent cannot start, and the pilot fails saying why.
// (A Session cannot be opened here to do all this: it needs its store reached first.)

const PASSWORD = 'secret-7Qz';
const URI = `mongodb://u:${PASSWORD}@127.0.0.1:1/x?serverSelectionTimeoutMS=500`;

describe('the agent of a MongoDB session', () => {
  const closers: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  it('gets the store in its 0600 bootstrap file, fails to start without it, and the pilot says why', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'pf-mongo-agent-'));
    closers.push(() => rmSync(dir, { recursive: true, force: true }));
    const session = 'pf-mongo-agent';
    const pilot = 'pilot.0000';
    const listenAt = 'tcp://127.0.0.1:0';

    // the session's side, as ClientRuntime wires it (insecure: no keys to issue)
    const control = await openSessionControl(session, listenAt, undefined, undefined, silentLogger);
    closers.push(
      () => control.bridge.close(),
      () => control.bus.close(),
      () => control.uplinks.close(),
    );
    const pipeline = new ManagerPipeline(
      () => undefined,
      systemClock,
      silentLogger,
      listenAt,
      session,
      { finalOf: () => undefined, descriptionOf: () => undefined, get: () => undefined },
      cwdOnlyLookup(dir),
    );
    pipeline.start();
    closers.push(() => pipeline.close());
    const choice = storeChoiceOf(URI);
    if (choice.kind !== 'mongodb') throw new Error('not a MongoDB choice');
    const links = new PilotLinks({
      security: undefined,
      pipeline,
      store: undefined,
      mongodb: choice,
      uplinks: control.uplinks,
      session,
      log: silentLogger,
      listenAt,
      controlDown: control.down,
      given: () => Promise.resolve(new Map()),
    });
    closers.push(() => links.close());
    await links.open(pilot);

    const sandbox = path.join(dir, pilot);
    const ended = new Promise<{ state: string; reason: Reason | undefined }>((resolve) => {
      const shell = new PilotLauncherShell({
        journal: { append: () => undefined },
        control: control.bus,
        notify: () => undefined,
        ended: (_uid, state, reason) => resolve({ state, reason }),
        // what PilotManager.agentConfig adds for a one-core local pilot
        agentConfig: (rec): AgentConfig => ({
          session,
          pilot: rec.uid,
          sandbox: rec.sandbox,
          sessionDir: dir,
          cores: rec.cores,
          gpus: rec.gpus,
          runtimeMin: 5,
          ...links.agentConfig(rec.uid),
        }),
        clock: systemClock,
        log: silentLogger,
        shutdownGraceMs: 1_000,
      });
      closers.push(() => shell.close());
      const rec: PilotRecord = {
        uid: pilot,
        session,
        state: 'PMGR_LAUNCHING_PENDING',
        description: { resource: 'local', cores: 1, gpus: 0 },
        cores: 1,
        gpus: 0,
        sandbox,
      };
      shell.core.onSubmit([rec]);
    });
    const end = await withTimeout(ended, 15_000, 'the pilot to end');

    const bootstrap = path.join(sandbox, 'agent.json');
    expect(statSync(bootstrap).mode & 0o777).toBe(0o600);
    const cfg = JSON.parse(readFileSync(bootstrap, 'utf8')) as AgentConfig;
    expect(cfg.mongodb).toEqual({ uri: URI, db: 'x' });
    expect(cfg.addresses.store).toBeUndefined();
    expect(cfg.resource).toBe('local');

    expect(end.state).toBe('FAILED');
    expect(end.reason?.message).toMatch(/exited with code 3/);
    expect(end.reason?.message).toMatch(/cannot reach MongoDB at 127\.0\.0\.1:1: .*ECONNREFUSED/);
    expect(readFileSync(path.join(sandbox, 'agent.err'), 'utf8')).toMatch(
      /failed to start: cannot reach MongoDB at 127\.0\.0\.1:1/,
    );
    expect(readFileSync(path.join(sandbox, 'agent.log'), 'utf8')).toContain('127.0.0.1:1');
    expect(JSON.stringify(end.reason)).not.toContain('secret');
    // the bootstrap file is the one place the password goes
    expect(filesHolding(dir, PASSWORD)).toEqual([bootstrap]);
  }, 30_000);
});
