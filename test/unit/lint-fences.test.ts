import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from '@jest/globals';

/**
 * The process fences of eslint.config.mjs: the code of the Node spawner helper's process and of
 * the Node function workers imports only Node built-ins, its own folder and the few specifiers
 * the config names, so a wrong import fails the lint. Each case is linted as a file of the fenced
 * folder, with the repository's own config (test/support/lint-text.js, one child for all).
 */
const HELPER = 'src/components/executor/process/helper/new-file.ts';
const WORKER = 'src/components/executor/functions/worker/new-file.ts';

const CASES = {
  helperOutside: {
    file: HELPER,
    code: [
      "import type { ExitedEvent } from '../../effects';",
      "import { SpawnerPool } from '../spawner-pool';",
      "import { silentLogger } from '../../../../lib/logger';",
      "import * as zmq from 'zeromq';",
      "import * as fs from 'fs';",
      "export { UsageError } from '../../../../errors';",
      "import { protocolCodec } from './../../functions/worker/protocol';",
      'export const x = [SpawnerPool, silentLogger, zmq, fs, protocolCodec];',
      'export type Y = ExitedEvent;',
    ],
  },
  helperAllowed: {
    file: HELPER,
    code: [
      "import * as fs from 'node:fs';",
      "import type { SpawnRequest } from './protocol';",
      "import { errnoText } from '../../../../lib/errno-text';",
      "import { TAIL_BYTES } from '../../../../lib/file-tail';",
      "import { encodeFrame } from '../../../../lib/output-frames';",
      'export const x = [fs, errnoText, TAIL_BYTES, encodeFrame];',
      'export type Y = SpawnRequest;',
    ],
  },
  helperLib: { file: 'src/lib/errno-text.ts', code: ["export { UsageError } from '../errors';"] },
  workerOutside: {
    file: WORKER,
    code: [
      "import type { CallOutcome } from '../pool-types';",
      "import { errnoText } from '../../../../lib/errno-text';",
      "import * as zmq from 'zeromq';",
      "import { Packr } from 'msgpackr';",
      "import { frame } from './protocol';",
      "import * as net from 'node:net';",
      'export const x = [errnoText, zmq, Packr, frame, net];',
      'export type Y = CallOutcome;',
    ],
  },
} as const;

type Case = keyof typeof CASES;
/** Per case, the fence's messages ("'<specifier>' import is restricted ... <why>"). */
const fenceMessages = {} as Record<Case, string[]>;
/** The specifiers a case's messages name, in order. */
const stopped = (c: Case): string[] => fenceMessages[c].map((m) => /^'([^']*)'/.exec(m)?.[1] ?? m);

beforeAll(async () => {
  const names = Object.keys(CASES) as Case[];
  const input = names.map((n) => ({ file: CASES[n].file, code: CASES[n].code.join('\n') }));
  const stdout = await new Promise<string>((resolve, reject) => {
    const child = execFile(
      process.execPath,
      [path.join(__dirname, '../support/lint-text.js')],
      { maxBuffer: 16 * 1024 * 1024 },
      (err, out, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(out)),
    );
    child.stdin!.end(JSON.stringify(input));
  });
  const results = JSON.parse(stdout) as { ruleId: string | null; message: string }[][];
  names.forEach((n, i) => {
    fenceMessages[n] = results[i]!.filter((m) => m.ruleId === 'no-restricted-imports').map(
      (m) => m.message,
    );
  });
}, 60_000);

describe('process fences (eslint.config.mjs)', () => {
  it('stop the spawner helper importing the agent side, a package or other src files', () => {
    expect(stopped('helperOutside')).toEqual([
      '../../effects',
      '../spawner-pool',
      '../../../../lib/logger',
      'zeromq',
      'fs',
      '../../../../errors',
      './../../functions/worker/protocol',
    ]);
    expect(fenceMessages.helperOutside[0]).toContain(
      "The Node spawner helper's code may import only Node built-ins",
    );
  });

  it('let the spawner helper import Node built-ins, its own folder and the named lib files', () => {
    expect(fenceMessages.helperAllowed).toEqual([]);
  });

  it('keep the lib files the helper imports free of imports but Node built-ins', () => {
    expect(stopped('helperLib')).toEqual(['../errors']);
    expect(fenceMessages.helperLib[0]).toContain('A file of src/lib that the Node spawner helper');
  });

  it('stop a function worker importing the pool, src/lib or a package other than msgpackr', () => {
    expect(stopped('workerOutside')).toEqual([
      '../pool-types',
      '../../../../lib/errno-text',
      'zeromq',
    ]);
    expect(fenceMessages.workerOutside[0]).toContain(
      "A Node function worker's code may import only",
    );
  });
});
