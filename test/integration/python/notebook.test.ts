import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { LiveService } from '../../support/serve';
import { stopServe } from '../../support/serve';
import {
  PYTHON,
  PYTHON_DIR,
  pythonClientMissing,
  runPython,
  servePythonReady,
} from '../../support/python-service';

// A real notebook, executed headless by Debian's Jupyter (nbconvert --execute, the python3
// kernel of python3-ipykernel): a function defined in one cell runs as a sweep on the pilot,
// the next cell reads the results.

function notebookMissing(): string | undefined {
  const why = pythonClientMissing();
  if (why !== undefined) return why;
  const r = spawnSync(PYTHON, ['-c', 'import nbconvert, ipykernel'], { encoding: 'utf8' });
  return r.status === 0
    ? undefined
    : 'no nbconvert or ipykernel (scripts/system-deps.sh installs them)';
}

const cell = (source: string) => ({
  cell_type: 'code',
  execution_count: null,
  metadata: {},
  outputs: [],
  source,
});

const missing = notebookMissing();

(missing === undefined ? describe : describe.skip)(
  `a notebook that runs a sweep remotely${missing === undefined ? '' : ` (skipped: ${missing})`}`,
  () => {
    let dir: string;
    let s: LiveService;

    beforeAll(async () => ({ dir, s } = await servePythonReady('pf-notebook-')), 60_000);
    afterAll(async () => {
      await stopServe(s, undefined);
      rmSync(dir, { recursive: true, force: true });
    }, 60_000);

    it('defines a function in a cell, runs it over a sweep, reads the results in the next', async () => {
      const nb = {
        nbformat: 4,
        nbformat_minor: 5,
        metadata: { kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' } },
        cells: [
          cell(
            `import sys\nsys.path.insert(0, ${JSON.stringify(PYTHON_DIR)})\nfrom pilotfish import Client\nc = Client()  # PILOTFISH_URL, PILOTFISH_TOKEN`,
          ),
          cell(
            'scale = 3\n\ndef energy(x):\n    import os\n    return {"x": x, "e": x * scale, "pid": os.getpid()}',
          ),
          cell('sweep = c.remote(energy, cores=1)\nresults = sweep.map(range(40))'),
          cell(
            'import os\nassert [r["e"] for r in results] == [3 * x for x in range(40)]\nassert os.getpid() not in {r["pid"] for r in results}\nprint("total", sum(r["e"] for r in results))',
          ),
        ],
      };
      const work = path.join(dir, 'nb');
      mkdirSync(work);
      writeFileSync(path.join(work, 'sweep.ipynb'), JSON.stringify(nb));
      const r = await runPython(
        s,
        [
          '-m',
          'nbconvert',
          '--to',
          'notebook',
          '--execute',
          'sweep.ipynb',
          '--output',
          'ran.ipynb',
          '--ExecutePreprocessor.kernel_name=python3',
          '--ExecutePreprocessor.timeout=120',
        ],
        {
          cwd: work,
          timeoutMs: 170_000,
          // Jupyter's own files in the test's directory, not the user's home
          env: {
            JUPYTER_RUNTIME_DIR: path.join(work, 'runtime'),
            JUPYTER_DATA_DIR: path.join(work, 'data'),
            IPYTHONDIR: path.join(work, 'ipython'),
          },
        },
      );
      if (r.code !== 0) throw new Error(`nbconvert ended ${r.code ?? r.signal}:\n${r.output}`);
      const ran = JSON.parse(readFileSync(path.join(work, 'ran.ipynb'), 'utf8')) as {
        cells: { outputs: { output_type: string; text?: string | string[] }[] }[];
      };
      const last = ran.cells[3]!.outputs.map((o) => [o.text ?? ''].flat().join('')).join('');
      expect(last).toBe(`total ${3 * ((39 * 40) / 2)}\n`);
    }, 180_000);
  },
);
