/**
 * The profile's views on big sessions (generated profiles: bench/synthetic-profile.ts, one local
 * pilot, tasks of 1-4 cores and 0.2-2 s placed by a greedy scheduler):
 *
 * - `timeline_render_ms_100k`: a 100,000-task timeline page (34 lanes: 32 cores, 2 GPUs) opened
 *   in headless Chromium: from navigation start to the first frame painted after the chart was
 *   drawn, by the page's own clock (target < 3000 ms). Skipped, with the reason, without
 *   Chromium (scripts/system-deps.sh installs it).
 * - `timeline_html_ms_100k` and `timeline_html_mb_100k`: writing that page (renderTimeline).
 * - `accounting_ms_1m_attempts` and `accounting_cpu_ms_1m_attempts`: the utilization report of
 *   1,000,000 task attempts on 32 cores (src/profile/utilization.ts), wall and CPU time.
 *
 * Quick runs use 2,000 tasks and 10,000 attempts (names unchanged; not measurements).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { renderTimeline } from '../src/profile/timeline';
import { utilization } from '../src/profile/utilization';
import { Browser, chromiumOrWhy } from './chromium';
import type { BenchOptions } from './harness';
import { syntheticProfile } from './synthetic-profile';

export const name = 'timeline';
export const description =
  'timeline page of 100,000 tasks rendered in Chromium; utilization report of 1,000,000 attempts';

async function renderInBrowser(file: string): Promise<number | string> {
  const chromium = chromiumOrWhy();
  if ('why' in chromium) return chromium.why;
  const browser = await Browser.launch(chromium.path);
  try {
    await browser.viewport(1400, 1000);
    await browser.open(file);
    await browser.waitFor('document.documentElement.dataset.renderedMs');
    return Number(await browser.evaluate<string>('document.documentElement.dataset.renderedMs'));
  } finally {
    await browser.close();
  }
}

export async function run({ quick, emit }: BenchOptions): Promise<void> {
  const tasks = quick ? 2_000 : 100_000;
  const nodes = [{ cores: 32, gpus: 2 }];
  const page = syntheticProfile({ tasks, nodes, gpuEvery: 11, failEvery: 97 });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pf-bench-timeline-'));
  try {
    const started = process.hrtime.bigint();
    const html = renderTimeline(page);
    const htmlMs = Number(process.hrtime.bigint() - started) / 1e6;
    emit({ metric: 'timeline_html_ms_100k', value: htmlMs, unit: 'ms', tasks });
    emit({ metric: 'timeline_html_mb_100k', value: html.length / 2 ** 20, unit: 'MiB', tasks });
    const file = path.join(dir, 'timeline.html');
    writeFileSync(file, html);
    const ms = await renderInBrowser(file);
    if (typeof ms === 'number') {
      emit({ metric: 'timeline_render_ms_100k', value: ms, unit: 'ms', tasks });
    } else process.stderr.write(`bench timeline: skipped timeline_render_ms_100k: ${ms}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const attempts = quick ? 10_000 : 1_000_000;
  const big = syntheticProfile({ tasks: attempts, nodes: [{ cores: 32, gpus: 0 }], seed: 7 });
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  const report = utilization(big);
  const wall = Number(process.hrtime.bigint() - started) / 1e6;
  const used = process.cpuUsage(cpu);
  if (!report.all.check.ok) throw new Error(`buckets do not add up: ${report.all.check.relError}`);
  emit({ metric: 'accounting_ms_1m_attempts', value: wall, unit: 'ms', attempts });
  emit({
    metric: 'accounting_cpu_ms_1m_attempts',
    value: (used.user + used.system) / 1000,
    unit: 'ms',
    attempts,
  });
}
