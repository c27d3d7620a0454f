import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  nativeSpawner,
  nativeSpawnerMissing,
} from '../../../../../src/components/executor/process/spawner-command';
import { tempDirs } from '../../../../support/temp-dirs';

describe('nativeSpawnerMissing (why the C helper is not there, and a fix the user can follow)', () => {
  const temp = tempDirs('pf-spawner-command-');

  it('in a checkout, from dist/ or under ts-jest from src/: npm run build', () => {
    const repo = temp.make();
    fs.mkdirSync(path.join(repo, 'src/components/executor/process'), { recursive: true });
    for (const dir of ['dist/src/components/executor/process', 'src/components/executor/process']) {
      expect(nativeSpawnerMissing(path.join(repo, dir))).toEqual({
        why: "dist/native/pf-spawner not built ('npm run build' says why)",
        fix: "install a C compiler (e.g. 'apt-get install gcc libc6-dev'), then run 'npm run build'",
      });
    }
  });

  it('in an installed package: npm rebuild, with what its install script said', () => {
    const pkg = path.join(temp.make(), 'node_modules/pilotfish');
    const dir = path.join(pkg, 'dist/src/components/executor/process');
    fs.mkdirSync(dir, { recursive: true });
    const fix =
      "install a C compiler (e.g. 'apt-get install gcc libc6-dev'), then run " +
      `'npm rebuild pilotfish' where pilotfish is installed (${pkg})`;
    expect(nativeSpawnerMissing(dir)).toEqual({
      why: 'dist/native/pf-spawner is missing from the installed package',
      fix,
    });
    fs.mkdirSync(path.join(pkg, 'dist/native'));
    fs.writeFileSync(path.join(pkg, 'dist/native/pf-spawner.why'), "no C compiler ('cc')\n");
    expect(nativeSpawnerMissing(dir)).toEqual({ why: "no C compiler ('cc')", fix });
  });

  it('an installed helper for another architecture is not used, and says so', () => {
    const pkg = path.join(temp.make(), 'node_modules/pilotfish');
    const dir = path.join(pkg, 'dist/src/components/executor/process');
    fs.mkdirSync(dir, { recursive: true });
    fs.mkdirSync(path.join(pkg, 'dist/native'));
    const elf = Buffer.alloc(64);
    elf.write('\x7fELF', 0, 'latin1');
    const foreign = process.arch === 's390x' ? 62 : 22;
    elf.writeUInt16LE(foreign, 18);
    fs.writeFileSync(path.join(pkg, 'dist/native/pf-spawner'), elf, { mode: 0o755 });
    expect(nativeSpawner(dir)).toBeUndefined();
    expect(nativeSpawnerMissing(dir).why).toBe(
      `dist/native/pf-spawner is built for another architecture (ELF machine ${foreign}, ` +
        `this is ${process.arch}): the install script did not run`,
    );
    fs.writeFileSync(path.join(pkg, 'dist/native/pf-spawner'), '#!/bin/sh\n', { mode: 0o755 });
    expect(nativeSpawner(dir)).toBe(path.join(pkg, 'dist/native/pf-spawner'));
  });
});
