import { afterEach, describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { V2Limits } from '../../../../../src/components/executor/process/pool-limits-v2';
import { silentLogger } from '../../../../../src/lib/logger';
import { trueSpec } from '../../../../support/spawn-spec';

// The pool's side of cgroup v2 limits on a fake tree (plain files: no kernel rule applies, so
// the agent never has to move); the real tree is test/integration/agent/cgroup-v2-limits.test.ts.

const MIB = 1024 * 1024;

describe('V2Limits on a fake cgroup v2 tree', () => {
  let root: string | undefined;

  afterEach(() => {
    if (root !== undefined) fs.rmSync(root, { recursive: true, force: true });
    root = undefined;
  });

  /** The agent's cgroup offering `controllers`, with a base below it. */
  function tree(controllers: string): { own: string; base: string } {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-fake-v2-'));
    const base = path.join(root, 'pilotfish-1-abc');
    fs.mkdirSync(base);
    fs.writeFileSync(path.join(root, 'cgroup.controllers'), `${controllers}\n`);
    fs.writeFileSync(path.join(root, 'cgroup.subtree_control'), '\n');
    return { own: root, base };
  }

  const spec = (limits?: Parameters<typeof trueSpec>[1]) => trueSpec('t1', limits);

  it('a tree that gives the agent no controller: why, and spawns without limits', () => {
    const { own, base } = tree('cpuset io');
    const limits = V2Limits.make(own, base, silentLogger);
    expect(limits.why).toBe(
      `the cgroup v2 tree gives no memory, pids or cpu controller to '${own}' (its cgroup.controllers lists none: they are not delegated to it)`,
    );
    expect(limits.controllers).toEqual([]);
    expect(limits.helperArgs()).toEqual([]);
    expect(limits.request(spec({ pids: 32 }))).toEqual({ op: 'spawn', ...spec() });
  });

  it('enables what the tree offers in the agent cgroup and the base; a spawn carries its files', () => {
    const { own, base } = tree('cpuset pids io memory');
    const limits = V2Limits.make(own, base, silentLogger);
    expect(limits.controllers).toEqual(['memory', 'pids']);
    expect(limits.why).toBe(`no cpu controller in the cgroup v2 tree of '${own}'`);
    expect(fs.readFileSync(path.join(own, 'cgroup.subtree_control'), 'utf8')).toBe('+memory +pids');
    expect(fs.readFileSync(path.join(base, 'cgroup.subtree_control'), 'utf8')).toBe(
      '+memory +pids',
    );
    expect(limits.helperArgs()).toEqual(['--cgroup-limits']);
    const req = limits.request(spec({ memoryBytes: 32 * MIB, pids: 64, cpus: 0.5 }));
    expect(req.cgroupLimits).toEqual({
      'memory.max': String(32 * MIB),
      'memory.swap.max': '0',
      'pids.max': '64',
    });
    expect(req).not.toHaveProperty('limits');
    expect(limits.ended('t1', 2)).toEqual({ kills: 2, limitBytes: 32 * MIB });
    expect(limits.ended('t1', 2)).toBeUndefined(); // forgotten
  });

  it('a task without a memory limit has no OOM kills to tell, whatever its helper says', () => {
    const { own, base } = tree('memory pids cpu');
    const limits = V2Limits.make(own, base, silentLogger);
    expect(limits.why).toBeUndefined();
    expect(limits.request(spec({ pids: 16 })).cgroupLimits).toEqual({ 'pids.max': '16' });
    expect(limits.ended('t1', 1)).toBeUndefined();
    limits.request(spec({ memoryBytes: MIB }));
    expect(limits.ended('t1')).toBeUndefined(); // its helper read none
  });
});
