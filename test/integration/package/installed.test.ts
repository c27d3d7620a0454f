import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { nativeSpawner } from '../../../src/components/executor/process/spawner-command';
import { waitForExit } from '../../support/processes';

const ROOT = path.resolve(__dirname, '../../..');

/** npm pack of this checkout, installed into a fresh directory as a user installs it. */
const suite = nativeSpawner() === undefined ? describe.skip : describe;
const title =
  nativeSpawner() === undefined
    ? 'the installed package (skipped: dist/native/pf-spawner not built, npm pack refuses)'
    : 'the installed package';

/** The environment of the npm and node children: not the one npm gave jest, no helper forced. */
function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !k.startsWith('npm_') && !k.startsWith('PILOTFISH_'),
    ),
  );
  return { ...env, ...extra };
}

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[], cwd: string, env = childEnv()): Promise<Ran> {
  return new Promise((resolve) => {
    const child = execFile(
      file,
      args,
      { cwd, env, timeout: 170_000, maxBuffer: 64 << 20 },
      (err, stdout, stderr) =>
        resolve({ code: err === null ? 0 : (child.exitCode ?? -1), stdout, stderr }),
    );
  });
}

/** Requires the installed pilotfish, runs three /bin/true tasks on a local pilot. */
const CLIENT = `
const { Session, PilotManager, TaskManager } = require('pilotfish');
(async () => {
  const session = await Session.open({ dir: '.pilotfish' });
  try {
    const [pilot] = await new PilotManager(session).submitPilots([{ resource: 'local', runtimeMin: 5 }]);
    const tmgr = new TaskManager(session);
    tmgr.addPilots([pilot]);
    const tasks = await tmgr.submitTasks([1, 2, 3].map(() => ({ executable: '/bin/true' })));
    await tmgr.waitTasks({ timeoutMs: 60000 });
    console.log(JSON.stringify({ states: tasks.map((t) => t.state), session: session.uid }));
  } finally {
    await session.close();
  }
})().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
`;

const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const GUIDE = fs.readFileSync(path.join(ROOT, 'docs/guide.md'), 'utf8');

/** The body of the README's `## title` section. */
function readmeSection(title: string): string {
  const body = README.split(`\n## ${title}\n`)[1]?.split('\n## ')[0];
  if (body === undefined) throw new Error(`README.md has no "## ${title}" section`);
  return body;
}

/** The first code block of a text in the given language. */
function firstBlock(text: string, lang: string, where: string): string {
  const code = new RegExp('```' + lang + '\n([\\s\\S]*?)```').exec(text)?.[1];
  if (code === undefined) throw new Error(`${where} has no \`\`\`${lang} block`);
  return code;
}

/** What the README says a TypeScript project installs beside pilotfish: the packages of its line. */
function typescriptInstall(): string[] {
  const line = firstBlock(readmeSection('Installing'), 'sh', 'README.md "Installing"')
    .split('\n')
    .find((l) => l.startsWith('npm install --save-dev '));
  if (line === undefined) throw new Error('README.md "Installing" names no npm install --save-dev');
  return line.replace(/#.*$/, '').trim().split(/\s+/).slice(3);
}

/** The guide's tsconfig.json: its json block of compilerOptions. */
function guideTsconfig(): string {
  const block = [...GUIDE.matchAll(/```json\n([\s\S]*?)```/g)]
    .map((m) => m[1]!)
    .find((b) => b.includes('"compilerOptions"'));
  if (block === undefined) throw new Error('docs/guide.md has no tsconfig.json block');
  return block;
}

/** Each relative Markdown link of a doc as [link, the path it names, relative to the doc's folder]. */
function relativeLinks(text: string): [string, string][] {
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((l) => !/^[a-z]+:/.test(l) && !l.startsWith('#'))
    .map((l) => [l, l.split('#')[0]!]);
}

suite(title, () => {
  let work: string;
  let app: string;
  let installed: string;
  let packed: { path: string; mode: number }[];

  beforeAll(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-package-'));
    app = path.join(work, 'app');
    installed = path.join(app, 'node_modules', 'pilotfish');
    fs.mkdirSync(app);
    const pack = await run('npm', ['pack', '--json', '--pack-destination', work], ROOT);
    expect([pack.code, pack.stderr]).toEqual([0, expect.anything()]);
    const [info] = JSON.parse(pack.stdout) as [
      { filename: string; files: { path: string; mode: number }[] },
    ];
    packed = info.files;
    // the user's install: scripts run (npm 11 warns it has not approved them), output shown
    const install = await run(
      'npm',
      [
        'install',
        '--no-audit',
        '--no-fund',
        '--prefer-offline',
        '--foreground-scripts',
        path.join(work, info.filename),
      ],
      app,
    );
    expect([install.code, install.stderr]).toEqual([0, expect.anything()]);
    expect(install.stdout + install.stderr).not.toContain('pilotfish: ');
    fs.writeFileSync(path.join(app, 'client.js'), CLIENT);
  }, 180_000);

  afterAll(() => {
    if (work !== undefined) fs.rmSync(work, { recursive: true, force: true });
  });

  /** Runs CLIENT in the app; its tasks' states and the agent's log lines. */
  async function runClient(): Promise<{ states: string[]; log: Record<string, unknown>[] }> {
    const ran = await run(process.execPath, ['client.js'], app);
    expect([ran.code, ran.stderr]).toEqual([0, '']);
    const { states, session } = JSON.parse(ran.stdout) as { states: string[]; session: string };
    const agentLog = path.join(app, '.pilotfish', session, 'pilot.0000', 'agent.log');
    const log = fs
      .readFileSync(agentLog, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const started = log.find((l) => l.message === 'spawner helpers started');
    // the session's end ends the agent, and the agent its helpers
    for (const pid of (started?.pids as number[] | undefined) ?? []) await waitForExit(pid, 30_000);
    return { states, log };
  }

  /** The machine the foreign helper claims (ELF e_machine): aarch64, or x86-64 on arm64. */
  const FOREIGN = process.arch === 'arm64' ? 62 : 183;

  /** Makes the installed helper one built for another architecture, as on another machine. */
  function foreignHelper(): void {
    const bin = path.join(installed, 'dist/native/pf-spawner');
    const elf = fs.readFileSync(nativeSpawner()!);
    elf.writeUInt16LE(FOREIGN, 18);
    fs.rmSync(bin, { force: true });
    fs.writeFileSync(bin, elf, { mode: 0o755 });
  }

  it('holds the build, the schemas, the workers and the spawner helper with its source, and nothing else', () => {
    const paths = packed.map((f) => f.path);
    for (const needed of [
      'package.json',
      'README.md',
      'dist/src/index.js',
      'dist/src/index.d.ts',
      'dist/src/agent/main.js',
      'dist/src/cli/main.js',
      'dist/src/components/executor/process/helper/main.js',
      'dist/schemas/task-description.schema.json',
      'workers/python_worker.py',
      'workers/pilotfish_remote.py',
      'python/pilotfish/__init__.py',
      'python/pyproject.toml',
      'dist/native/pf-spawner',
      'native/spawner/pf-spawner.c',
      'scripts/install-native.js',
      'scripts/slurm-up.sh',
      'scripts/slurm-down.sh',
      'LICENSE',
      'CHANGELOG.md',
      'docs/guide.md',
      'docs/cli.md',
      'docs/images/timeline.png',
      'docs/dashboard.md',
      'dist/dashboard/index.html',
      'dist/dashboard/app.js',
      'dist/dashboard/style.css',
    ]) {
      expect(paths).toContain(needed);
    }
    expect(packed.find((f) => f.path === 'dist/native/pf-spawner')!.mode & 0o111).toBe(0o111);
    const allowed =
      /^(package\.json|README\.md|LICENSE|CHANGELOG\.md|docs\/[\w-]+\.md|docs\/images\/[\w-]+\.png|dist\/(src|schemas)\/.*|dist\/dashboard\/(index\.html|app\.js|style\.css)|workers\/[^/]+\.py|python\/pilotfish\/[\w]+\.py|python\/(pyproject\.toml|README\.md)|dist\/native\/pf-spawner|native\/spawner\/pf-spawner\.c|scripts\/(install-native\.js|slurm-up\.sh|slurm-down\.sh))$/;
    expect(paths.filter((p) => !allowed.test(p))).toEqual([]);
    expect(paths.filter((p) => /(^|\/)(test|node_modules)\/|\.test\.js$|\.cmd$/.test(p))).toEqual(
      [],
    );
  });

  it("type-checks the README's TypeScript example, strict, with only what the docs install", async () => {
    const added = typescriptInstall();
    expect(added).toEqual(expect.arrayContaining([expect.stringMatching(/^@types\/node@/)]));
    const install = await run(
      'npm',
      ['install', '--no-audit', '--no-fund', '--prefer-offline', '--save-dev', ...added],
      app,
    );
    expect([install.code, install.stderr]).toEqual([0, expect.anything()]);
    // an ES module project (the example awaits at the top level) under the app's node_modules
    const project = path.join(app, 'ts');
    fs.mkdirSync(project);
    fs.writeFileSync(path.join(project, 'package.json'), '{ "type": "module", "private": true }\n');
    fs.writeFileSync(path.join(project, 'tsconfig.json'), guideTsconfig());
    fs.writeFileSync(
      path.join(project, 'hello.ts'),
      firstBlock(readmeSection('A client script'), 'ts', 'README.md "A client script"'),
    );
    const tsc = await run(
      process.execPath,
      [path.join(app, 'node_modules/typescript/bin/tsc'), '-p', project, '--noEmit'],
      project,
    );
    expect([tsc.code, tsc.stdout, tsc.stderr]).toEqual([0, '', '']);
    const options = (JSON.parse(guideTsconfig()) as { compilerOptions: Record<string, unknown> })
      .compilerOptions;
    expect(options).toMatchObject({ strict: true });
    expect(options.skipLibCheck).toBeUndefined(); // pilotfish's and its dependencies' .d.ts too
  }, 120_000);

  it('ships the docs its README links to: every relative link of README and docs resolves inside', () => {
    const docs = [
      'README.md',
      'CHANGELOG.md',
      ...fs
        .readdirSync(path.join(installed, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => `docs/${f}`),
    ];
    expect(docs).toEqual(expect.arrayContaining(['docs/guide.md', 'docs/cli.md']));
    const wrong: string[] = [];
    let links = 0;
    for (const doc of docs) {
      for (const [link, target] of relativeLinks(
        fs.readFileSync(path.join(installed, doc), 'utf8'),
      )) {
        links++;
        const abs = path.resolve(installed, path.dirname(doc), target);
        if (path.relative(installed, abs).startsWith('..')) wrong.push(`${doc}: ${link}: outside`);
        else if (!fs.existsSync(abs)) wrong.push(`${doc}: ${link}: not in the package`);
      }
    }
    expect(wrong).toEqual([]);
    expect(links).toBeGreaterThan(50);
  });

  it('names the installed docs in --help, by paths that exist', async () => {
    const bin = path.join(app, 'node_modules/.bin/pilotfish');
    const helps = await Promise.all(
      [['--help'], ['run', '--help'], ['timeline', '--help']].map((args) => run(bin, args, app)),
    );
    const named = helps.flatMap((h) => {
      expect([h.code, h.stderr]).toEqual([0, '']);
      return [...h.stdout.matchAll(/\S*docs\/[\w-]+\.md/g)].map((m) => m[0]);
    });
    expect(named.map((p) => path.basename(p)).sort()).toEqual([
      'cli.md',
      'cli.md',
      'guide.md',
      'profiling.md',
    ]);
    for (const p of named) {
      expect(path.isAbsolute(p)).toBe(true);
      expect(fs.realpathSync(p)).toBe(
        fs.realpathSync(path.join(installed, 'docs', path.basename(p))),
      );
    }
  }, 60_000);

  it('serves the dashboard it ships from an installed `pilotfish serve`', async () => {
    const bin = path.join(app, 'node_modules/.bin/pilotfish');
    const serve = spawn(bin, ['serve', '--dir', path.join(work, 'svc'), '--port', '0'], {
      cwd: app,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const ended = new Promise<void>((resolve) => serve.once('close', () => resolve()));
    try {
      let stderr = '';
      const url = await new Promise<string>((resolve, reject) => {
        serve.stderr.on('data', (d: Buffer) => {
          stderr += d.toString();
          const m = /dashboard: (\S+\/dashboard\/)/.exec(stderr);
          if (m !== null) resolve(m[1]!);
        });
        void ended.then(() => reject(new Error(`serve ended: ${stderr}`)));
      });
      for (const [file, type] of [
        ['', 'text/html; charset=utf-8'],
        ['app.js', 'text/javascript; charset=utf-8'],
        ['style.css', 'text/css; charset=utf-8'],
      ] as const) {
        const r = await fetch(`${url}${file}`);
        expect([r.status, r.headers.get('content-type')]).toEqual([200, type]);
        const body = await r.text();
        expect(body).toBe(
          fs.readFileSync(path.join(installed, 'dist/dashboard', file || 'index.html'), 'utf8'),
        );
      }
    } finally {
      serve.kill('SIGTERM');
      await ended;
    }
  }, 90_000);

  it('runs the lab scripts it ships (`pilotfish lab`)', async () => {
    const bin = path.join(app, 'node_modules/.bin/pilotfish');
    const lab = path.join(work, 'no-lab');
    const stop = await run(bin, ['lab', 'stop', '--lab', lab], app);
    expect([stop.code, stop.stderr.trim()]).toEqual([
      0,
      `slurm-down: nothing to stop (${lab} does not exist)`,
    ]);
    const env = await run(bin, ['lab', 'env', '--lab', lab], app);
    expect(env.code).toBe(1);
  }, 60_000);

  it('runs its tasks through the C helper it ships', async () => {
    const { states, log } = await runClient();
    expect(states).toEqual(['DONE', 'DONE', 'DONE']);
    const started = log.find((l) => l.message === 'spawner helpers started');
    expect(started).toMatchObject({
      helper: 'native',
      command: fs.realpathSync(path.join(installed, 'dist/native/pf-spawner')),
    });
  }, 120_000);

  it('builds the helper from its source where the shipped one does not run', async () => {
    foreignHelper();
    const rebuild = await run('npm', ['rebuild', '--foreground-scripts', 'pilotfish'], app);
    expect([rebuild.code, rebuild.stderr]).toEqual([0, expect.anything()]);
    expect(rebuild.stdout).toContain('pilotfish: built the C spawner helper');
    const { states, log } = await runClient();
    expect(states).toEqual(['DONE', 'DONE', 'DONE']);
    expect(log.find((l) => l.message === 'spawner helpers started')).toMatchObject({
      helper: 'native',
    });
  }, 120_000);

  it('installed without its install script on another machine, uses the Node helper', async () => {
    foreignHelper();
    const { states, log } = await runClient();
    expect(states).toEqual(['DONE', 'DONE', 'DONE']);
    expect(log.find((l) => l.message === 'spawner helpers started')).toMatchObject({
      helper: 'node',
    });
    const warned = log.find((l) => l.level === 'warn' && /native spawner/.test(String(l.message)));
    expect(warned).toMatchObject({
      why: expect.stringContaining(
        `dist/native/pf-spawner is built for another architecture (ELF machine ${FOREIGN}`,
      ),
      fix: expect.stringContaining("then run 'npm rebuild pilotfish'"),
    });
  }, 120_000);

  it('without a compiler uses the Node helper and says what to install', async () => {
    foreignHelper();
    const env = childEnv({ CC: path.join(work, 'no-such-cc') });
    const rebuild = await run('npm', ['rebuild', '--foreground-scripts', 'pilotfish'], app, env);
    expect(rebuild.code).toBe(0);
    const said = rebuild.stderr.split('\n').filter((l) => l.startsWith('pilotfish: '));
    expect(said).toEqual([
      expect.stringMatching(
        /^pilotfish: no C spawner helper \(the prebuilt helper: it is built for another architecture \(ELF machine \d+, this is \w+\); no C compiler \('.*no-such-cc'\)\): tasks will start through the slower Node helper; to build it, install a C compiler \(e\.g\. 'apt-get install gcc libc6-dev'\), then run 'npm rebuild pilotfish'$/,
      ),
    ]);
    expect(fs.existsSync(path.join(installed, 'dist/native/pf-spawner'))).toBe(false);
    const { states, log } = await runClient();
    expect(states).toEqual(['DONE', 'DONE', 'DONE']);
    expect(log.find((l) => l.message === 'spawner helpers started')).toMatchObject({
      helper: 'node',
    });
    const warned = log.find((l) => l.level === 'warn' && /native spawner/.test(String(l.message)));
    expect(warned).toMatchObject({
      why: expect.stringContaining("no C compiler ('"),
      fix: expect.stringContaining("then run 'npm rebuild pilotfish' where pilotfish is installed"),
    });
  }, 120_000);
});
