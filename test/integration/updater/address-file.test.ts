import { describe, expect, it } from '@jest/globals';
import { statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { AddressFile } from '../../../src/updater/embedded/address-file';
import { StoreError } from '../../../src/updater/state-store';
import { tempDirs } from '../../support/temp-dirs';

describe("AddressFile: an embedded session's published addresses", () => {
  const temp = tempDirs('pf-address-file-');
  const at = (epoch: number) => ({
    epoch,
    controlDown: `tcp://127.0.0.1:${4000 + epoch}`,
    pilots: [
      { uid: 'pilot.0000', agentInput: 'a', managerOutput: 'b', controlUp: 'c', store: 'd' },
    ],
    at: 1,
  });

  it('reads none at first, then what was published (0600), and refuses an epoch not above it', async () => {
    const file = path.join(temp.make(), 'addresses.json');
    const board = new AddressFile(file);
    await expect(board.read()).resolves.toBeUndefined();
    await board.publish('s', at(1));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    await expect(board.read()).resolves.toEqual(at(1));
    await expect(board.publish('s', at(1))).rejects.toThrow(/another client resumed/);
    await board.publish('s', at(2));
    await expect(board.read()).resolves.toEqual(at(2));
  });

  it('says what is wrong with a file not of the schema', async () => {
    const file = path.join(temp.make(), 'addresses.json');
    writeFileSync(file, JSON.stringify({ epoch: 0 }));
    const e = await new AddressFile(file).read().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(StoreError);
    expect((e as Error).message).toMatch(/addresses\.json is not valid: .*controlDown/);
  });
});
