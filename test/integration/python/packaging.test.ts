import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PYTHON, PYTHON_DIR } from '../../support/python-service';

// The Python client's own packaging (python/pyproject.toml): pip installs it, offline, into a
// virtual environment of Debian's python3, and it imports from there with the right version.

function pipMissing(): string | undefined {
  const r = spawnSync(PYTHON, ['-c', 'import setuptools, wheel, pip, venv'], { encoding: 'utf8' });
  return r.status === 0
    ? undefined
    : `${PYTHON} lacks pip, setuptools or wheel (scripts/system-deps.sh)`;
}

const missing = pipMissing();

(missing === undefined ? describe : describe.skip)(
  `the Python client's package${missing === undefined ? '' : ` (skipped: ${missing})`}`,
  () => {
    let dir: string;
    beforeAll(() => void (dir = mkdtempSync(path.join(os.tmpdir(), 'pf-pypkg-'))));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('installs with pip from the repository, offline, and imports with its version', () => {
      const src = path.join(dir, 'src');
      cpSync(PYTHON_DIR, src, { recursive: true }); // a build leaves files beside the sources
      const venv = path.join(dir, 'venv');
      execFileSync(PYTHON, ['-m', 'venv', '--without-pip', '--system-site-packages', venv]);
      const py = path.join(venv, 'bin', 'python');
      execFileSync(py, ['-m', 'pip', 'install', '-q', '--no-build-isolation', '--no-index', src], {
        env: { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: '1' },
        stdio: 'pipe',
      });
      const out = execFileSync(
        py,
        [
          '-c',
          'import pilotfish, json; print(json.dumps([pilotfish.__file__, pilotfish.__version__]))',
        ],
        { cwd: dir, encoding: 'utf8' },
      );
      const [file, version] = JSON.parse(out) as [string, string];
      expect(file.startsWith(path.join(venv, 'lib'))).toBe(true);
      const toml = readFileSync(path.join(PYTHON_DIR, 'pyproject.toml'), 'utf8');
      expect(version).toBe(/^version = "([^"]+)"/m.exec(toml)![1]);
    }, 120_000);
  },
);
