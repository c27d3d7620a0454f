import { afterEach, describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PoolLimits } from '../../../../../src/components/executor/process/pool-limits';
import {
  limitWrites,
  oomKillsOf,
  v1Cgroups,
  type Controller,
} from '../../../../../src/components/executor/process/task-limits';
import { silentLogger } from '../../../../../src/lib/logger';
import type { SpawnSpec } from '../../../../../src/components/executor/effects';
import { trueSpec } from '../../../../support/spawn-spec';

const MIB = 1024 * 1024;

describe('limitWrites', () => {
  const all = { memoryBytes: 64 * MIB, pids: 32, cpus: 1.5 };

  it('cgroup v1: the memory limit, then the same swap-inclusive one; pids.max; the CFS quota of 1.5 cores', () => {
    expect(limitWrites('v1', all)).toEqual([
      { controller: 'memory', file: 'memory.limit_in_bytes', value: String(64 * MIB) },
      { controller: 'memory', file: 'memory.memsw.limit_in_bytes', value: String(64 * MIB) },
      { controller: 'pids', file: 'pids.max', value: '32' },
      { controller: 'cpu', file: 'cpu.cfs_period_us', value: '100000' },
      { controller: 'cpu', file: 'cpu.cfs_quota_us', value: '150000' },
    ]);
  });

  it('cgroup v1 without swap accounting: no memsw file', () => {
    expect(limitWrites('v1', { memoryBytes: MIB }, false)).toEqual([
      { controller: 'memory', file: 'memory.limit_in_bytes', value: String(MIB) },
    ]);
  });

  it('cgroup v2: memory.max and no swap, pids.max, cpu.max as "quota period"', () => {
    expect(limitWrites('v2', all)).toEqual([
      { controller: 'memory', file: 'memory.max', value: String(64 * MIB) },
      { controller: 'memory', file: 'memory.swap.max', value: '0' },
      { controller: 'pids', file: 'pids.max', value: '32' },
      { controller: 'cpu', file: 'cpu.max', value: '150000 100000' },
    ]);
  });

  it('writes only what is asked, and no quota under the kernel minimum of 1 ms', () => {
    expect(limitWrites('v2', {})).toEqual([]);
    expect(limitWrites('v2', { cpus: 0.001 })).toEqual([
      { controller: 'cpu', file: 'cpu.max', value: '1000 100000' },
    ]);
  });
});

describe('oomKillsOf', () => {
  it('reads the oom_kill count of memory.oom_control (v1) and memory.events (v2)', () => {
    expect(oomKillsOf('oom_kill_disable 0\nunder_oom 0\noom_kill 3\n')).toBe(3);
    expect(oomKillsOf('low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n')).toBe(1);
    expect(oomKillsOf('oom_kill_disable 0\nunder_oom 0\n')).toBe(0);
  });
});

describe('v1Cgroups', () => {
  const mountinfo = [
    '31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
    '32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct',
    '35 31 0:32 /process_api /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
    '39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids',
    '41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
  ].join('\n');
  const cgroup = ['8:pids:/job/1', '4:memory:/process_api/abc', '2:cpu,cpuacct:/', '0::/'].join(
    '\n',
  );

  it("joins each hierarchy's mount with the process's path in it (a co-mount and a subtree mount too)", () => {
    expect(Object.fromEntries(v1Cgroups(mountinfo, cgroup))).toEqual({
      memory: '/sys/fs/cgroup/memory/abc',
      pids: '/sys/fs/cgroup/pids/job/1',
      cpu: '/sys/fs/cgroup/cpu,cpuacct',
    });
  });

  it('leaves out what has no hierarchy or lies outside the mounted tree', () => {
    const v2only = '41 31 0:38 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw';
    expect(v1Cgroups(v2only, '0::/user.slice').size).toBe(0);
    expect(v1Cgroups(mountinfo, '4:memory:/elsewhere').size).toBe(0);
  });

  it('puts the hierarchies under `root` when given', () => {
    expect(v1Cgroups('', '8:pids:/a\n4:memory:/', '/tmp/x').get('pids')).toBe('/tmp/x/pids/a');
  });
});

describe('PoolLimits on a fake cgroup tree', () => {
  let root: string | undefined;

  afterEach(() => {
    if (root !== undefined) fs.rmSync(root, { recursive: true, force: true });
    root = undefined;
  });

  /** A tree with this process's cgroup directories of `controllers` under `root`. */
  function fakeTree(controllers: Controller[]): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-fake-cgroup-'));
    root = dir;
    const own = v1Cgroups('', fs.readFileSync('/proc/self/cgroup', 'utf8'), dir);
    for (const c of controllers) {
      fs.mkdirSync(own.get(c) ?? path.join(dir, c), { recursive: true });
    }
    return dir;
  }

  it("makes a base and a task's cgroups in each controller and writes its limits there", async () => {
    const limits = PoolLimits.make({ v1Root: fakeTree(['memory', 'pids', 'cpu']) }, silentLogger);
    expect(limits.why).toBeUndefined();
    const dirs = limits.request(
      trueSpec('t1', { memoryBytes: 8 * MIB, pids: 20, cpus: 2 }),
    ).cgroups!;
    expect(dirs.map((d) => path.basename(path.dirname(d)))).toEqual(
      [0, 1, 2].map(() => expect.stringMatching(/^pilotfish-\d+-[0-9a-f]{6}$/) as unknown),
    );
    const read = (i: number, f: string): string => fs.readFileSync(path.join(dirs[i]!, f), 'utf8');
    expect(read(0, 'memory.limit_in_bytes')).toBe(String(8 * MIB));
    expect(fs.existsSync(path.join(dirs[0]!, 'memory.memsw.limit_in_bytes'))).toBe(false);
    expect(read(1, 'pids.max')).toBe('20');
    expect([read(2, 'cpu.cfs_period_us'), read(2, 'cpu.cfs_quota_us')]).toEqual([
      '100000',
      '200000',
    ]);
    // the kernel's counter of OOM kills, read at the task's end
    fs.writeFileSync(path.join(dirs[0]!, 'memory.oom_control'), 'under_oom 0\noom_kill 2\n');
    expect(limits.ended('t1')).toEqual({ kills: 2, limitBytes: 8 * MIB });
    expect(limits.ended('t1')).toBeUndefined(); // once
    for (const d of dirs) for (const f of fs.readdirSync(d)) fs.rmSync(path.join(d, f));
    await limits.close();
    for (const d of dirs) expect(fs.existsSync(path.dirname(d))).toBe(false);
  });

  it('sends no cgroups for a task without limits, and only those of the controllers it has', async () => {
    const limits = PoolLimits.make({ v1Root: fakeTree(['pids']) }, silentLogger);
    expect(limits.controllers).toEqual(['pids']);
    expect(limits.why).toMatch(/^memory: cannot create .*; cpu: cannot create /);
    const spec = trueSpec('t2');
    expect(limits.request(spec)).toEqual({ op: 'spawn', ...spec });
    const req = limits.request({ ...spec, limits: { memoryBytes: MIB, pids: 16 } });
    expect(req.limits).toBeUndefined();
    expect(req.cgroups).toHaveLength(1);
    expect(fs.readFileSync(path.join(req.cgroups![0]!, 'pids.max'), 'utf8')).toBe('16');
    expect(limits.ended('t2')).toBeUndefined(); // no memory limit: no OOM kills to read
    for (const f of fs.readdirSync(req.cgroups![0]!)) fs.rmSync(path.join(req.cgroups![0]!, f));
    await limits.close();
  });

  it('keeps an empty cgroup of pids.max alone for the next task of the same limit', async () => {
    const limits = PoolLimits.make({ v1Root: fakeTree(['pids']) }, silentLogger);
    const spec = (uid: string, pids: number): SpawnSpec => trueSpec(uid, { pids });
    const [first] = limits.request(spec('a', 16)).cgroups!;
    fs.writeFileSync(path.join(first!, 'pids.current'), '0\n'); // empty once its task ended
    limits.ended('a');
    expect(limits.request(spec('b', 16)).cgroups).toEqual([first]);
    expect(limits.request(spec('c', 17)).cgroups).not.toEqual([first]); // another limit
    fs.writeFileSync(path.join(first!, 'pids.current'), '3\n'); // leftovers still in it
    limits.ended('b');
    expect(limits.request(spec('d', 16)).cgroups).not.toEqual([first]);
    limits.ended('c');
    limits.ended('d');
    for (const base of limits.controllers.map(() => path.dirname(first!))) {
      for (const d of fs.readdirSync(base)) {
        for (const f of fs.readdirSync(path.join(base, d))) fs.rmSync(path.join(base, d, f));
      }
    }
    await limits.close();
    expect(fs.existsSync(path.dirname(first!))).toBe(false);
  });
});
