import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Browser, chromiumOrWhy } from '../../../bench/chromium';
import type { SimulationReport, TaskTimes } from '../../../src/simulator';
import { runCli } from '../../support/cli';

type Doc = SimulationReport & { tasks: TaskTimes[] };

const WORKLOAD = {
  pilots: [{ resource: 'local', cores: 2, gpus: 0, memMb: 4000 }],
  tasks: [
    { uid: 'A', executable: '/bin/true', walltimeS: 10 },
    { uid: 'B', executable: '/bin/true', walltimeS: 5, coresPerRank: 2 },
    { uid: 'C', executable: '/bin/true', walltimeS: 3, priority: 10 },
    { uid: 'D', executable: '/bin/true', walltimeS: 4, name: 'dee' },
  ],
};

describe('pilotfish simulate', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pf-simulate-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, body: unknown): string => {
    const f = path.join(dir, name);
    writeFileSync(f, JSON.stringify(body));
    return f;
  };

  it('--json: one document with the makespan, utilization, counts and every task, the same every run', async () => {
    const w = file('w.json', WORKLOAD);
    const r = await runCli(['simulate', w, '--json']);
    expect([r.code, r.stderr]).toEqual([
      0,
      expect.stringMatching(/4 tasks simulated in .* s \(wall\)/),
    ]);
    const doc = JSON.parse(r.stdout) as Doc;
    expect(doc.makespan_s).toBe(15);
    expect(doc.counts).toEqual({ DONE: 4, FAILED: 0, CANCELED: 0, unfinished: 0 });
    expect(doc.utilization.core).toBeCloseTo(27 / 30, 9);
    expect(doc.tasks).toEqual([
      { uid: 'A', pilot: 'pilot.0000', state: 'DONE', start_s: 0, end_s: 10 },
      { uid: 'B', pilot: 'pilot.0000', state: 'DONE', start_s: 10, end_s: 15 },
      { uid: 'C', pilot: 'pilot.0000', state: 'DONE', start_s: 0, end_s: 3 },
      { uid: 'D', name: 'dee', pilot: 'pilot.0000', state: 'DONE', start_s: 3, end_s: 7 },
    ]);
    const again = await runCli(['simulate', w, '--json']);
    expect(again.stdout).toBe(r.stdout); // byte for byte
  }, 30_000);

  it('--nodes/--cores override the pilots; --starts writes JSON lines; a failed task exits 1', async () => {
    const w = file('o.json', {
      tasks: [...WORKLOAD.tasks, { uid: 'W', executable: 'x', walltimeS: 1, coresPerRank: 9 }],
    });
    const starts = path.join(dir, 'starts.jsonl');
    const r = await runCli(['simulate', w, '--nodes', '2', '--cores', '2', '--starts', starts]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/tasks +5: 4 DONE, 1 FAILED/);
    expect(r.stdout).toMatch(/E_NEVER_FITS 1 task\(s\), first W:/);
    const lines = readFileSync(starts, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as TaskTimes);
    expect(lines.map((t) => [t.uid, t.start_s, t.state])).toEqual([
      ['A', 0, 'DONE'],
      ['B', 0, 'DONE'],
      ['C', 0, 'DONE'],
      ['D', 3, 'DONE'],
      ['W', null, 'FAILED'],
    ]);
  }, 30_000);

  it.each([
    [
      'a bad workload names the JSON path',
      { tasks: [{ executable: 1 }] },
      [],
      /\/tasks\/0\/executable must be string/,
    ],
    [
      'a task without walltimeS is named',
      { tasks: [{ executable: 'x', name: 'prep' }] },
      ['--nodes', '1', '--cores', '1'],
      /\/tasks\/0 \(task.000000 'prep'\) declares no walltimeS/,
    ],
    ['--nodes without --cores', { tasks: [] }, ['--nodes', '2'], /--nodes and --cores go together/],
    [
      'a bad number',
      { tasks: [] },
      ['--nodes', 'two', '--cores', '1'],
      /--nodes must be an integer/,
    ],
  ])(
    '%s: exit 2',
    async (_what, body, args, message) => {
      const r = await runCli(['simulate', file('bad.json', body), ...args]);
      expect([r.code, r.stdout]).toEqual([2, '']);
      expect(r.stderr).toMatch(message);
    },
    30_000,
  );

  it('--timeline writes the chart of pilotfish timeline', async () => {
    const html = path.join(dir, 'sim.html');
    const r = await runCli(['simulate', file('t.json', WORKLOAD), '--timeline', html]);
    expect(r.code).toBe(0);
    const page = readFileSync(html, 'utf8');
    expect(page).toMatch(/^<!doctype html>/i);
    expect(page).toContain('pilot.0000');
  }, 30_000);

  const chromium = chromiumOrWhy();
  const itIf = 'path' in chromium ? it : it.skip;
  itIf(
    'the timeline of a simulation renders in Chromium: a lane per core, the tasks in them',
    async () => {
      const html = path.join(dir, 'render.html');
      const r = await runCli(['simulate', file('r.json', WORKLOAD), '--timeline', html]);
      expect(r.code).toBe(0);
      const browser = await Browser.launch((chromium as { path: string }).path);
      try {
        await browser.open(html);
        await browser.waitFor('document.documentElement.dataset.renderedMs');
        const lanes = await browser.evaluate<number>(
          `document.querySelectorAll('rect.lane').length`,
        );
        expect(lanes).toBe(2);
        const running = await browser.evaluate<string>(
          `document.querySelector('path.phase-running').getAttribute('d')`,
        );
        expect([...running.matchAll(/M[\d.]+ [\d.]+h[\d.]+/g)].length).toBeGreaterThanOrEqual(4);
      } finally {
        await browser.close();
      }
    },
    60_000,
  );
});
