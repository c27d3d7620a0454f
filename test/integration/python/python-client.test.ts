import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { rmSync } from 'node:fs';
import * as path from 'node:path';
import type { LiveService } from '../../support/serve';
import { stopServe } from '../../support/serve';
import {
  PYTHON_DIR,
  pythonClientMissing,
  runPython,
  servePythonReady,
} from '../../support/python-service';

// The Python client's own tests (python/tests, standard unittest) against a real
// `pilotfish serve`, run with Debian's python3: a module per test here, its output shown when
// it fails.

const missing = pythonClientMissing();
const MODULES = ['test_client', 'test_streams', 'test_remote'];

(missing === undefined ? describe : describe.skip)(
  `the Python client against pilotfish serve${missing === undefined ? '' : ` (skipped: ${missing})`}`,
  () => {
    let dir: string;
    let s: LiveService;

    beforeAll(async () => ({ dir, s } = await servePythonReady('pf-python-')), 60_000);
    afterAll(async () => {
      await stopServe(s, undefined);
      rmSync(dir, { recursive: true, force: true });
    }, 60_000);

    for (const m of MODULES) {
      it(`passes python/tests/${m}.py`, async () => {
        const r = await runPython(s, ['-m', 'unittest', '-v', m], {
          cwd: path.join(PYTHON_DIR, 'tests'),
          timeoutMs: 280_000,
        });
        if (r.code !== 0) {
          throw new Error(`python3 -m unittest ${m} ended ${r.code ?? r.signal}:\n${r.output}`);
        }
        expect(r.output).toMatch(/\nOK( \(|\n|$)/);
        expect(r.output).not.toMatch(/skipped/);
      }, 300_000);
    }
  },
);
