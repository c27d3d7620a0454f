import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ProfileReport } from '../../../src/profile/intervals';
import { BUCKETS } from '../../../src/profile/utilization';
import { runCli } from '../../support/cli';
import { runMixedSession } from '../../support/mixed-session';

describe('pilotfish profile and timeline on a finished session', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pf-profile-'));
  let session = '';
  beforeAll(async () => {
    session = await runMixedSession(dir, 24, 6);
  }, 120_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('prints every task and pilot with its intervals and a utilization whose buckets add up (--json)', async () => {
    const r = await runCli(['profile', path.basename(session), '--dir', dir, '--json']);
    expect([r.code, r.stderr]).toEqual([0, '']);
    const p = JSON.parse(r.stdout) as ProfileReport;
    expect(p.session).toBe(path.basename(session));
    expect(p.tasks).toHaveLength(24);
    const [pilot] = p.utilization.pilots;
    expect(pilot!.cores).toBe(6);
    expect(pilot!.check.ok).toBe(true);
    const sum = BUCKETS.reduce((s, b) => s + pilot!.coreSeconds[b], 0);
    expect(sum).toBeCloseTo(pilot!.coreSeconds.total, 6);
    expect(pilot!.coreSeconds.running).toBeGreaterThan(0);
    expect(pilot!.utilization).toBeGreaterThan(0);
    for (const t of p.tasks) {
      const a = t.attempts[t.attempts.length - 1]!;
      expect(a.slots?.length).toBeGreaterThan(0);
      const run = a.intervals.running!;
      expect(run[1]).toBeGreaterThanOrEqual(run[0]);
      if (t.name !== 'fails') expect(run[1] - run[0]).toBeGreaterThan(50); // sleeps of 0.1 s and more
    }
    expect(p.pilots[0]!.intervals.active).toBeDefined();
  }, 30_000);

  it('prints a readable summary without --json (the newest session by default)', async () => {
    const r = await runCli(['profile', '--dir', dir]);
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(r.stdout).toMatch(/^pilot pilot\.\d+: 1 node, 6 cores, 0 GPUs/m);
    expect(r.stdout).toMatch(/utilization \d+\.\d% {2}efficiency \d+\.\d%/);
    for (const b of BUCKETS) expect(r.stdout).toMatch(new RegExp(`^ {4}${b} `, 'm'));
    expect(r.stdout).toMatch(/^ {2}FAILED +1$/m);
  }, 30_000);

  it('writes a self-contained timeline file', async () => {
    const out = path.join(dir, 'timeline.html');
    const r = await runCli(['timeline', session, '-o', out]);
    expect([r.code, r.stderr]).toEqual([0, '']);
    const html = readFileSync(out, 'utf8');
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).not.toMatch(/\b(src|href)=["']?(https?:)?\/\//); // nothing fetched
    expect(html).toContain(path.basename(session));
  }, 30_000);

  it('exits 2 for a session that does not exist, 0 for --help', async () => {
    for (const cmd of ['profile', 'timeline']) {
      const r = await runCli([cmd, 'pf.20000101.000000.abcdef', '--dir', dir]);
      expect([cmd, r.code]).toEqual([cmd, 2]);
      expect(r.stderr).toContain('no session');
      const h = await runCli([cmd, '--help']);
      expect([cmd, h.code]).toEqual([cmd, 0]);
      expect(h.stdout).toContain('exit status:');
    }
  }, 30_000);
});
