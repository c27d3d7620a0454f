import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ProfileReport } from '../../../src/profile/intervals';
import type { SimulationReport, TaskTimes } from '../../../src/simulator';
import { runCli } from '../../support/cli';

/**
 * The same workload run for real (a local pilot of 4 cores, /bin/sleep tasks) and simulated:
 * the starts come in the same order and the makespans (first start to last end) are within 10%.
 * The workload was picked so the scheduler decides the order, not a race: every task reaches the
 * agent in one bulk before any slot frees, and in the simulation no two tasks end within 0.15 s
 * of each other (a real release a few tens of ms late changes nothing). Tasks that start at one
 * simulated instant form a wave; the real starts must come in the same waves.
 */
const SPEC: [string, number, number, number][] = [
  // uid, cores, priority, seconds
  ['t00', 1, 0, 0.75],
  ['t01', 1, 0, 0.95],
  ['t02', 1, 5, 0.65],
  ['t03', 1, 5, 1.1],
  ['t04', 2, 0, 0.55],
  ['t05', 2, 5, 0.95],
  ['t06', 2, 5, 0.75],
  ['t07', 1, 0, 0.85],
  ['t08', 2, 0, 0.9],
  ['t09', 1, 0, 1.15],
  ['t10', 1, 0, 0.65],
  ['t11', 1, 5, 0.85],
];

const WORKLOAD = {
  pilots: [{ resource: 'local', cores: 4, gpus: 0, memMb: 4000, agent: { followOns: false } }],
  tasks: SPEC.map(([uid, cores, priority, s]) => ({
    uid,
    executable: '/bin/sleep',
    arguments: [String(s)],
    coresPerRank: cores,
    priority,
    walltimeS: s,
  })),
};

describe('pilotfish simulate against pilotfish run', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pf-sim-vs-run-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('starts the tasks in the same order, with a makespan within 10% of the real one', async () => {
    const file = path.join(dir, 'w.json');
    writeFileSync(file, JSON.stringify(WORKLOAD));

    const sim = await runCli(['simulate', file, '--json']);
    expect(sim.code).toBe(0);
    const doc = JSON.parse(sim.stdout) as SimulationReport & { tasks: TaskTimes[] };
    const simulated = doc.tasks.map((t) => ({ uid: t.uid, start: t.start_s!, end: t.end_s! }));

    const run = await runCli(['run', file, '--dir', dir, '--json']);
    expect(run.code).toBe(0);
    const session = (JSON.parse(run.stdout) as { session: string }).session;
    const prof = await runCli(['profile', session, '--dir', dir, '--json']);
    expect(prof.code).toBe(0);
    const report = JSON.parse(prof.stdout) as ProfileReport;
    const real = report.tasks.map((t) => {
      const a = t.attempts.at(-1)!;
      return { uid: t.uid, start: a.launched! / 1000, end: a.exited! / 1000 };
    });
    expect(real.every((t) => Number.isFinite(t.start) && Number.isFinite(t.end))).toBe(true);

    // the waves of the simulation, in order, and the real starts cut into waves of those sizes
    const waves = new Map<number, string[]>();
    for (const t of [...simulated].sort((a, b) => a.start - b.start)) {
      waves.set(t.start, [...(waves.get(t.start) ?? []), t.uid]);
    }
    const byStart = [...real].sort((a, b) => a.start - b.start).map((t) => t.uid);
    const realWaves: string[][] = [];
    let at = 0;
    for (const w of waves.values()) {
      realWaves.push(byStart.slice(at, at + w.length).sort());
      at += w.length;
    }
    expect(realWaves).toEqual([...waves.values()].map((w) => [...w].sort()));

    const span = (ts: { start: number; end: number }[]): number =>
      Math.max(...ts.map((t) => t.end)) - Math.min(...ts.map((t) => t.start));
    const realSpan = span(real);
    const simSpan = span(simulated);
    process.stderr.write(`makespan: real ${realSpan.toFixed(3)} s, simulated ${simSpan} s\n`);
    expect(Math.abs(simSpan - realSpan) / realSpan).toBeLessThan(0.1);
  }, 120_000);
});
