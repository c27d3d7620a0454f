import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { ControlServer } from '../../../../src/client/control/server';
import type { ControlContext, ControlRuntime } from '../../../../src/client/control/context';
import { linesLogger } from '../../../support/lines-logger';
import { tempDirs } from '../../../support/temp-dirs';

/** What listen() uses of a context: its runtime's directory and log (warnings recorded). */
function runtimeIn(dir: string): { rt: ControlContext; warned: () => string[] } {
  const log = linesLogger();
  const runtime = { dir, log } as unknown as ControlRuntime;
  return {
    rt: {
      runtime,
      managers: { pilots: new Set(), tasks: new Set(), routers: new Set() },
      closing: () => false,
    },
    warned: () => log.warned(),
  };
}

describe('ControlServer.listen', () => {
  const dirs = tempDirs('pf-control-');
  const servers: Server[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
  });

  it('leaves the socket of another live client of the session alone, and says so', async () => {
    const dir = dirs.make();
    const holder = createServer();
    servers.push(holder);
    await new Promise<void>((r) => holder.listen(path.join(dir, 'control.sock'), r));
    const { rt, warned } = runtimeIn(dir);
    expect(await ControlServer.listen(rt)).toBeUndefined();
    expect(warned()).toEqual(['no control socket: another client of this session holds it']);
    expect(holder.listening).toBe(true);
  });

  it('goes without one where the path is too long for a Unix socket', async () => {
    const dir = path.join(dirs.make(), 'x'.repeat(100));
    mkdirSync(dir);
    const { rt, warned } = runtimeIn(dir);
    expect(await ControlServer.listen(rt)).toBeUndefined();
    expect(warned()).toEqual(['no control socket: its path is too long for a Unix socket']);
  });

  it('listens, and removes its socket at close', async () => {
    const dir = dirs.make();
    const { rt, warned } = runtimeIn(dir);
    const control = await ControlServer.listen(rt);
    expect(control?.file).toBe(path.join(dir, 'control.sock'));
    expect(existsSync(control!.file)).toBe(true);
    await control!.close();
    expect(existsSync(control!.file)).toBe(false);
    expect(warned()).toEqual([]);
  });
});
