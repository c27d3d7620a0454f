import { mkdtempSync, rmSync } from 'node:fs';
import { afterEach } from '@jest/globals';
import * as os from 'node:os';
import * as path from 'node:path';
import { PilotManager } from '../../src/client/pilot-manager';
import { Session } from '../../src/client/session';
import { TaskManager } from '../../src/client/task-manager';
import type { Pilot } from '../../src/client/pilot';
import type { PilotDescription } from '../../src/generated';

/** A session with one local pilot in a temp dir; `close()` stops everything and removes the dir. */
export interface Fixture {
  dir: string;
  session: Session;
  pmgr: PilotManager;
  tmgr: TaskManager;
  pilot: Pilot;
  close(): Promise<void>;
}

export async function openFixture(
  pilot: Partial<PilotDescription> = {},
  addPilot = true,
): Promise<Fixture> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pf-it-'));
  const session = await Session.open({ dir });
  const pmgr = new PilotManager(session, { shutdownGraceMs: 5_000 });
  const tmgr = new TaskManager(session);
  const [p] = await pmgr.submitPilots([{ resource: 'local', cores: 2, runtimeMin: 5, ...pilot }]);
  if (addPilot) tmgr.addPilots([p!]);
  return {
    dir,
    session,
    pmgr,
    tmgr,
    pilot: p!,
    close: async () => {
      await session.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * For a describe block: `open()` starts a fixture that is closed after each test, so a test
 * that fails midway leaves nothing running.
 */
export function fixtures(): { open: typeof openFixture } {
  const open: Fixture[] = [];
  afterEach(async () => {
    for (const fx of open.splice(0)) await fx.close();
  });
  return {
    open: async (...args) => {
      const fx = await openFixture(...args);
      open.push(fx);
      return fx;
    },
  };
}
