import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { syntheticProfile } from '../../../bench/synthetic-profile';
import type { ProfileReport } from '../../../src/profile/intervals';
import { renderTimeline } from '../../../src/profile/timeline';
import { Browser, chromiumOrWhy } from '../../../bench/chromium';
import { runCli } from '../../support/cli';
import { runMixedSession } from '../../support/mixed-session';

const chromium = chromiumOrWhy();
if ('why' in chromium && process.env.CI !== undefined) {
  throw new Error(`the browser test must run in CI: ${chromium.why}`); // never skipped there
}
const describeIf = 'path' in chromium ? describe : describe.skip;
const title =
  'pilotfish timeline in Chromium' + ('why' in chromium ? ` (skipped: ${chromium.why})` : '');

/** Where the screenshot goes: PILOTFISH_TIMELINE_PNG (docs/images/timeline.png is one), else a temp dir. */
const screenshotTo = process.env.PILOTFISH_TIMELINE_PNG;

describeIf(title, () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pf-timeline-'));
  let browser: Browser;
  let report: ProfileReport;
  const html = path.join(dir, 'timeline.html');

  beforeAll(async () => {
    const session = await runMixedSession(dir, 60, 8);
    const t = await runCli(['timeline', session, '-o', html]);
    if (t.code !== 0) throw new Error(t.stderr);
    const p = await runCli(['profile', session, '--json']);
    report = JSON.parse(p.stdout) as ProfileReport;
    browser = await Browser.launch((chromium as { path: string }).path);
    await browser.viewport(1400, 640); // the page's height: the screenshot has no blank below
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('draws a lane per core, the tasks in them, and shows a task on hover', async () => {
    await browser.open(html);
    await browser.waitFor('document.documentElement.dataset.renderedMs');
    const lanes = await browser.evaluate<string[]>(
      `[...document.querySelectorAll('rect.lane')].map((r) => r.dataset.lane)`,
    );
    expect(lanes).toEqual(
      Array.from({ length: 8 }, (_, i) => expect.stringMatching(new RegExp(`core ${i}$`))),
    );
    // task shapes: rectangles in the running path, some in every lane
    const running = await browser.evaluate<string>(
      `document.querySelector('path.phase-running').getAttribute('d')`,
    );
    const rects = [...running.matchAll(/M([\d.]+) ([\d.]+)h([\d.]+)/g)].map((m) =>
      m.slice(1).map(Number),
    );
    const ys = new Set(rects.map(([, y]) => y!));
    expect(ys.size).toBe(8);
    expect(
      await browser.evaluate<number>(`document.querySelectorAll('path.util-cores').length`),
    ).toBe(1);
    expect(await browser.evaluate<number>(`document.querySelectorAll('path.count').length`)).toBe(
      4,
    );
    expect(
      await browser.evaluate<number>(`document.querySelectorAll('rect.pilot').length`),
    ).toBeGreaterThan(0);
    // a local pilot waits for no job: no "waiting for its job" segment
    expect(await browser.evaluate<number>(`document.querySelectorAll('rect.pilot-0').length`)).toBe(
      0,
    );
    // lines of equal counts (all 0 at the start) lie side by side, none hidden under another
    const starts = await browser.evaluate<number[]>(
      `[...document.querySelectorAll('path.count')].map((p) => Number(/^M[\\d.]+ ([\\d.]+)/.exec(p.getAttribute('d'))[1]))`,
    );
    expect(new Set(starts).size).toBe(4);
    // the lanes take the window's height: the drawing ends near the window's bottom edge,
    // not with the lower part of the page empty
    const bottom = await browser.evaluate<number>(
      `document.getElementById('pf-svg').getBoundingClientRect().bottom / window.innerHeight`,
    );
    expect(bottom).toBeGreaterThan(0.9);
    expect(bottom).toBeLessThanOrEqual(1.0);
    // tasks wide enough carry their names (the mixed session names them) inside their rectangles
    const labels = await browser.evaluate<string[]>(
      `[...document.querySelectorAll('text.task-label')].map((t) => t.textContent)`,
    );
    expect(labels.length).toBeGreaterThan(0);
    expect(labels.every((l) => l.length >= 3)).toBe(true);

    // the widest running rectangle: move the mouse to its middle
    const [x, y, w] = rects.sort((a, b) => b[2]! - a[2]!)[0]!;
    const box = await browser.evaluate<{ left: number; top: number }>(
      `(() => { const r = document.getElementById('pf-svg').getBoundingClientRect(); return { left: r.left, top: r.top }; })()`,
    );
    await browser.mouseMove(box.left + x! + w! / 2, box.top + y! + 2);
    await browser.waitFor(`document.getElementById('pf-tip').style.display === 'block'`);
    const uid = await browser.evaluate<string>(
      `document.querySelector('#pf-tip .tip-uid').textContent`,
    );
    const tip = await browser.evaluate<string>(`document.getElementById('pf-tip').textContent`);
    const task = report.tasks.find((t) => t.uid === uid);
    expect(task).toBeDefined();
    const lane = lanes[[...ys].sort((a, b) => a - b).indexOf(y!)]!;
    const core = Number(/core (\d+)$/.exec(lane)![1]);
    expect(task!.attempts.at(-1)!.slots![0]!.cores).toContain(core);
    expect(tip).toContain('running');
    expect(tip).toContain(task!.name!);

    const png = await browser.screenshot();
    const to = screenshotTo ?? path.join(dir, 'timeline.png');
    mkdirSync(path.dirname(to), { recursive: true });
    writeFileSync(to, png);
    expect(readFileSync(to).subarray(1, 4).toString()).toBe('PNG');
  }, 60_000);

  it('renders a 100,000-task session in under 3 s', async () => {
    const p = syntheticProfile({
      tasks: 100_000,
      nodes: [{ cores: 32, gpus: 2 }],
      gpuEvery: 11,
      failEvery: 97,
    });
    const big = path.join(dir, 'big.html');
    writeFileSync(big, renderTimeline(p));
    const started = process.hrtime.bigint();
    await browser.open(big);
    await browser.waitFor('document.documentElement.dataset.renderedMs');
    const wall = Number(process.hrtime.bigint() - started) / 1e6;
    // from navigation start to the first frame painted after the chart was drawn, by the page's clock
    const ms = Number(
      await browser.evaluate<string>('document.documentElement.dataset.renderedMs'),
    );
    process.stderr.write(
      `timeline of 100,000 tasks: painted ${ms} ms after navigation, ${wall.toFixed(0)} ms wall\n`,
    );
    expect(ms).toBeLessThan(3000);
    expect(wall).toBeLessThan(3000);
    expect(await browser.evaluate<number>(`document.querySelectorAll('rect.lane').length`)).toBe(
      34,
    );
  }, 120_000);
});
