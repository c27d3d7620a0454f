/**
 * Spare task directories (SpawnSpec.recycle): the C helper keeps the own directory a task left
 * empty, after an exit 0 with nothing of the task left, as a spare beside it, reset to what a
 * mkdir makes, and renames it into place for a later task's own directory; what it cannot
 * vouch for stays where it is (the AgentOutputStager removes it, as the Node helper's).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { FileSpawnSpec } from '../../../../../src/components/executor/effects';
import {
  SpawnerPool,
  nativeSpawner,
  type SpawnerHelper,
} from '../../../../../src/components/executor/process/spawner-pool';
import {
  makeCgroupBase,
  removeCgroupTree,
} from '../../../../../src/components/executor/process/helper/task-cgroup';
import { silentLogger } from '../../../../../src/lib/logger';
import { Events, RawHelper, describeEachHelper } from './spawner-fixtures';

type OwnDirSpec = FileSpawnSpec & { mkdir: string };

/** A task in a directory of its own under `parent` (made by its helper), output beside it. */
function ownDirSpec(parent: string, uid: string, script: string, recycle: boolean): OwnDirSpec {
  const dir = path.join(parent, uid);
  return {
    uid,
    executable: '/bin/sh',
    args: ['-c', script],
    env: {},
    cwd: dir,
    mkdir: dir,
    ...(recycle ? { recycle: true } : {}),
    stdoutPath: path.join(parent, `${uid}.out`),
    stderrPath: path.join(parent, `${uid}.err`),
  };
}

describeEachHelper('own task directories left empty', (helper: SpawnerHelper) => {
  let pool: SpawnerPool | undefined;
  let events: Events;
  let root = '';
  let n = 0;

  beforeAll(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-spares-'));
  });
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
  afterEach(async () => {
    await pool?.close();
    pool = undefined;
  });

  async function start(): Promise<SpawnerPool> {
    events = new Events();
    pool = await SpawnerPool.start({
      count: 1,
      logger: silentLogger,
      handlers: events.handlers,
      helper,
    });
    return pool;
  }

  /** A task in a directory of its own under `parent`, with a fresh uid. */
  const own = (parent: string, script: string, recycle = true): OwnDirSpec =>
    ownDirSpec(parent, `task.${++n}`, script, recycle);

  const spares = (parent: string): string[] =>
    fs.readdirSync(parent).filter((f) => f.startsWith('.pf-spare-'));

  async function run(s: FileSpawnSpec): Promise<number | null> {
    pool!.spawn(s);
    return (await events.exit(s.uid)).exitCode;
  }

  /** Whether this helper keeps spares here: the C one, tracking tasks by cgroup. */
  const keeps = (p: SpawnerPool): boolean => helper === 'native' && p.tracking === 'cgroup';

  it('are taken away after an exit 0 and become the next own directory, reset to 0700 and empty', async () => {
    const p = await start();
    const parent = fs.mkdtempSync(path.join(root, 'p-'));
    // the first task opens its directory to everyone: the next must not inherit that
    const first = own(parent, 'chmod 0777 . && test -z "$(ls -A)"');
    expect(await run(first)).toBe(0);
    if (!keeps(p)) {
      expect(fs.existsSync(first.mkdir)).toBe(true); // the AgentOutputStager removes it
      expect(spares(parent)).toEqual([]);
      return;
    }
    expect(fs.existsSync(first.mkdir)).toBe(false);
    const [spare] = spares(parent);
    expect(spare).toMatch(/^\.pf-spare-\d+-\d+$/); // <helper pid>-<n>
    expect(fs.statSync(path.join(parent, spare!)).mode & 0o7777).toBe(0o700);
    const second = own(parent, 'stat -c %a .; ls -A | wc -l; pwd', false);
    expect(await run(second)).toBe(0);
    expect(fs.readFileSync(second.stdoutPath, 'utf8')).toBe(`700\n0\n${second.mkdir}\n`);
    expect(spares(parent)).toEqual([]); // it was renamed into place
    expect(fs.existsSync(second.mkdir)).toBe(true); // not asked to recycle: it stays
  });

  it('stay where they are when the task left something in them, failed, or did not ask', async () => {
    await start();
    const parent = fs.mkdtempSync(path.join(root, 'p-'));
    const wrote = own(parent, 'echo x > result');
    const failed = own(parent, 'exit 3');
    const unasked = own(parent, 'true', false);
    expect(await run(wrote)).toBe(0);
    expect(await run(failed)).toBe(3);
    expect(await run(unasked)).toBe(0);
    expect(fs.readFileSync(path.join(wrote.mkdir, 'result'), 'utf8')).toBe('x\n');
    expect(fs.readdirSync(failed.mkdir)).toEqual([]);
    expect(fs.readdirSync(unasked.mkdir)).toEqual([]);
    expect(spares(parent)).toEqual([]);
  });

  it('stay where they are while something the task started still runs', async () => {
    await start();
    const parent = fs.mkdtempSync(path.join(root, 'p-'));
    // a leftover holds the directory as its working directory until the kill grace ends it
    const left = own(parent, 'sleep 30 </dev/null >/dev/null 2>&1 & exit 0');
    expect(await run(left)).toBe(0);
    expect(fs.existsSync(left.mkdir)).toBe(true);
    expect(spares(parent)).toEqual([]);
  });

  it('kept as spares are removed when the helper ends', async () => {
    const p = await start();
    const parent = fs.mkdtempSync(path.join(root, 'p-'));
    expect(await run(own(parent, 'true'))).toBe(0);
    expect(await run(own(parent, 'true'))).toBe(0);
    expect(spares(parent)).toHaveLength(keeps(p) ? 1 : 0);
    await p.close();
    pool = undefined;
    expect(spares(parent)).toEqual([]);
  });
});

// what the C helper's exit event says of the task's end (its cgroup, its directory)
const base =
  nativeSpawner() === undefined ? { why: 'dist/native/pf-spawner not built' } : makeCgroupBase();
(('dir' in base ? describe : describe.skip) as typeof describe)(
  `the C helper's exit event${'why' in base ? ` (skipped: ${base.why})` : ''}`,
  () => {
    let h: RawHelper | undefined;
    let parent = '';
    beforeAll(() => {
      parent = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-spares-raw-'));
    });
    afterAll(async () => {
      await h?.close();
      if ('dir' in base) await removeCgroupTree(base.dir, 5_000);
      fs.rmSync(parent, { recursive: true, force: true });
    });

    it('says `clean` when nothing of the task is left and `recycled` when its directory became a spare', async () => {
      h = await RawHelper.start('native', ['--cgroup', (base as { dir: string }).dir]);
      const spawn = (uid: string, script: string): void =>
        h!.send({ op: 'spawn', ...ownDirSpec(parent, uid, script, true) });
      spawn('a', 'true');
      expect(await h.of('exited', 'a')).toMatchObject({ exitCode: 0, clean: true, recycled: true });
      spawn('b', 'touch kept');
      const b = await h.of('exited', 'b');
      expect(b).toMatchObject({ exitCode: 0, clean: true });
      expect(b).not.toHaveProperty('recycled');
      spawn('c', 'sleep 30 </dev/null >/dev/null 2>&1 & exit 0');
      const c = await h.of('exited', 'c');
      expect(c).not.toHaveProperty('clean');
      expect(c).not.toHaveProperty('recycled');
      expect(await h.end()).toEqual({ code: 0, signal: null });
      h = undefined;
    });
  },
);

// the C helper keeps the cgroup.procs of the v1 cgroups it moves into open (SpawnSpec.cgroups)
const pidsRoot = (() => {
  const line = fs.existsSync('/proc/self/cgroup')
    ? fs
        .readFileSync('/proc/self/cgroup', 'utf8')
        .split('\n')
        .find((l) => /^\d+:pids:/.test(l))
    : undefined;
  const own =
    line === undefined ? undefined : path.join('/sys/fs/cgroup/pids', line.split(':')[2]!);
  return own !== undefined && fs.existsSync(own) && nativeSpawner() !== undefined ? own : undefined;
})();
(pidsRoot === undefined ? describe.skip : describe)(
  `the C helper in cgroup v1 directories${pidsRoot === undefined ? ' (skipped: no cgroup v1 pids hierarchy here, or no C helper)' : ''}`,
  () => {
    let h: RawHelper | undefined;
    const baseDir = path.join(pidsRoot ?? '/', `pf-spares-test-${process.pid}`);
    let out = ''; // the tasks' stdout (a cgroup directory holds no files)
    beforeAll(() => {
      out = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-spares-v1-'));
    });
    afterAll(async () => {
      await h?.close();
      for (const d of [path.join(baseDir, 't'), baseDir]) if (fs.existsSync(d)) fs.rmdirSync(d);
      fs.rmSync(out, { recursive: true, force: true });
    });

    it('starts a task in a v1 cgroup removed and made again since the last task in it', async () => {
      const dir = path.join(baseDir, 't');
      fs.mkdirSync(dir, { recursive: true });
      h = await RawHelper.start('native');
      const spawn = (uid: string): void =>
        h!.send({
          op: 'spawn',
          uid,
          executable: '/bin/sh',
          args: ['-c', 'cat /proc/self/cgroup'],
          env: {},
          cwd: '/',
          cgroups: [dir],
          stdoutPath: path.join(out, `${uid}.out`),
          stderrPath: '/dev/null',
        });
      const inside = `pids:${dir.slice('/sys/fs/cgroup/pids'.length)}\n`;
      spawn('first');
      expect(await h.of('exited', 'first')).toMatchObject({ exitCode: 0 });
      expect(fs.readFileSync(path.join(out, 'first.out'), 'utf8')).toContain(inside);
      fs.rmdirSync(dir); // what the helper kept open of it is stale now
      fs.mkdirSync(dir);
      spawn('again');
      expect(await h.of('exited', 'again')).toMatchObject({ exitCode: 0 });
      expect(fs.readFileSync(path.join(out, 'again.out'), 'utf8')).toContain(inside);
      expect(await h.end()).toEqual({ code: 0, signal: null });
      h = undefined;
    });
  },
);
