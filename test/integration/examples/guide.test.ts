import { afterEach, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { waitForExit } from '../../support/processes';
import { tempDirs } from '../../support/temp-dirs';

const ROOT = path.join(__dirname, '../../..');
const GUIDE = fs.readFileSync(path.join(ROOT, 'docs/guide.md'), 'utf8');

/** The code block of docs/guide.md whose first line is `// <name>`. */
function script(name: string): string {
  const block = [...GUIDE.matchAll(/```js\n([\s\S]*?)```/g)]
    .map((m) => m[1]!)
    .find((code) => code.startsWith(`// ${name}\n`));
  if (block === undefined) throw new Error(`docs/guide.md has no block starting '// ${name}'`);
  return block;
}

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  out: string;
}

/**
 * The guide's scripts, run as a user runs them: in a fresh directory whose node_modules/pilotfish
 * is this checkout (its package.json `exports`, i.e. the built dist/src, as an install gives).
 */
describe('docs/guide.md scripts', () => {
  const temp = tempDirs('pf-guide-');
  /** Agents a test may leave behind when it fails between a crash and its resume. */
  const journals: string[] = [];

  afterEach(async () => {
    for (const journal of journals.splice(0)) {
      if (!fs.existsSync(journal)) continue;
      for (const line of fs.readFileSync(journal, 'utf8').split('\n')) {
        const pid = line.startsWith('{"t":"agent"')
          ? (JSON.parse(line) as { pid?: number }).pid
          : undefined;
        if (pid === undefined) continue;
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          continue; // gone already
        }
        await waitForExit(pid, 10_000);
      }
    }
  });

  const app = (): string => {
    const dir = temp.make();
    fs.mkdirSync(path.join(dir, 'node_modules'));
    fs.symlinkSync(ROOT, path.join(dir, 'node_modules', 'pilotfish'));
    return dir;
  };

  const run = (dir: string, file: string, code: string): Promise<Run> => {
    fs.writeFileSync(path.join(dir, file), code);
    return new Promise((resolve) => {
      const child = execFile(
        process.execPath,
        [file],
        { cwd: dir, timeout: 120_000 },
        (_err, stdout, stderr) =>
          resolve({ code: child.exitCode, signal: child.signalCode, out: stdout + stderr }),
      );
    });
  };

  it('hello.mjs (an ES module) runs its two tasks as the guide shows', async () => {
    const r = await run(app(), 'hello.mjs', script('hello.mjs'));
    expect([r.code, r.out]).toEqual([
      0,
      expect.stringContaining('task.000000 hello DONE "hello\\n"'),
    ]);
    expect(r.out).toContain('task.000001 sleepy FAILED ""');
    expect(r.out).toContain(
      'task.000001 E_TASK_TIMEOUT task ran longer than its timeoutS of 5 s and was killed',
    );
    expect(r.out).toMatch(/session pf\.\d{8}\.\d{6}\.[0-9a-f]{6} in \//);
  }, 150_000);

  it('hello.cjs (CommonJS, an async main) runs its task', async () => {
    const r = await run(app(), 'hello.cjs', script('hello.cjs'));
    expect([r.code, r.out]).toEqual([0, 'task.000000 DONE hello\n\n']);
  }, 150_000);

  it('crash.mjs dies with tasks running, and resume.mjs, given its uid, ends them all', async () => {
    const dir = app();
    const crash = await run(dir, 'crash.mjs', script('crash.mjs'));
    expect(crash.signal).toBe('SIGKILL');
    const uid = /resume: '(pf\.[\w.]+)'/.exec(crash.out)?.[1];
    expect(uid).toMatch(/^pf\.\d{8}\.\d{6}\.[0-9a-f]{6}$/);
    journals.push(path.join(dir, '.pilotfish', uid!, 'journal.jsonl'));
    const written = script('resume.mjs');
    const shown = /resume: '(pf\.[\w.]+)'/.exec(written)?.[1];
    expect(shown).toMatch(/^pf\.\d{8}\.\d{6}\.[0-9a-f]{6}$/);
    const r = await run(dir, 'resume.mjs', written.replace(shown!, uid!));
    expect([r.code, r.signal]).toEqual([0, null]);
    for (const i of [0, 1, 2, 3]) expect(r.out).toContain(`task.00000${i} DONE "step ${i + 1}\\n"`);
  }, 150_000);
});
