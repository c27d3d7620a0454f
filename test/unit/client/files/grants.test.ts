import { describe, expect, it } from '@jest/globals';
import { FileGrants } from '../../../../src/client/files/grants';

describe('FileGrants', () => {
  it('lets a task read and write exactly what it was given', () => {
    const g = new FileGrants();
    g.allow('p0', 't1', { read: ['/data/in'], write: ['/data/out'] });
    expect(g.check('p0', 't1', 'read', '/data/in')).toBeUndefined();
    expect(g.check('p0', 't1', 'write', '/data/out')).toBeUndefined();
    expect(g.check('p0', 't1', 'write', '/data/in')).toBe('task t1 of p0 may not write /data/in');
    expect(g.check('p0', 't1', 'read', '/data/out')).toBe('task t1 of p0 may not read /data/out');
    expect(g.check('p0', 't1', 'read', '/data/other')).toMatch(/may not read/);
  });

  it('keeps pilots and tasks apart', () => {
    const g = new FileGrants();
    g.allow('p0', 't1', { read: ['/data/in'] });
    expect(g.check('p1', 't1', 'read', '/data/in')).toBe('task t1 of p1 was granted no transfers');
    expect(g.check('p0', 't2', 'read', '/data/in')).toBe('task t2 of p0 was granted no transfers');
  });

  it('refuses paths not in normal form before looking at grants', () => {
    const g = new FileGrants();
    g.allow('p0', 't1', { read: ['/data/in'] });
    expect(g.check('p0', 't1', 'read', '/data/x/../in')).toBe(
      'the path is not in normal form (/data/in)',
    );
    expect(g.check('p0', 't1', 'read', 'data/in')).toBe('the path is not absolute');
  });

  it('normalizes what it is given, and refuses relative paths', () => {
    const g = new FileGrants();
    g.allow('p0', 't1', { read: ['/data/./sub/../in/'] });
    expect(g.check('p0', 't1', 'read', '/data/in')).toBeUndefined();
    expect(() => g.allow('p0', 't1', { write: ['out.txt'] })).toThrow(
      "cannot allow write of 'out.txt' for task t1: it is not absolute",
    );
  });

  it('adds to a task grant, and forgets it whole', () => {
    const g = new FileGrants();
    g.allow('p0', 't1', { read: ['/a'] });
    g.allow('p0', 't1', { read: ['/b'], write: ['/c'] });
    expect(['/a', '/b'].map((p) => g.check('p0', 't1', 'read', p))).toEqual([undefined, undefined]);
    expect(g.has('p0', 't1')).toBe(true);
    g.forget('p0', 't1');
    expect(g.has('p0', 't1')).toBe(false);
    expect(g.check('p0', 't1', 'read', '/a')).toMatch(/granted no transfers/);
    g.allow('p0', 't2', { read: ['/a'] });
    g.forgetPilot('p0');
    expect(g.has('p0', 't2')).toBe(false);
  });
});
