/**
 * The whole path on a local pilot with every core, store and callbacks included:
 *
 * - `pilot_startup_ms`: submitPilots to the PMGR_ACTIVE callback (median over a few pilots).
 * - `exec_tasks_per_s`: N no-op `/bin/true` tasks (1 core each), first submit to the last final
 *   callback.
 * - `task_latency_ms_p50` / `_p99`: one task at a time on an idle pilot, submit to its DONE
 *   callback.
 *
 * Peers (GNU parallel, Dask) and the spawn limit of the machine come with the fast Executor.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PilotManager, Session, TaskManager } from '../src';
import { median, nowNs, secondsBetween, sig, type BenchOptions } from './harness';

export const name = 'e2e';
export const description =
  'local pilot: start-up, /bin/true tasks per second and one-task latency, store and callbacks included';

export async function run({ quick, emit }: BenchOptions): Promise<void> {
  const n = quick ? 200 : 5_000;
  const latencies = quick ? 10 : 200;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-bench-e2e-'));
  const session = await Session.open({ dir });
  try {
    const pmgr = new PilotManager(session);
    const tmgr = new TaskManager(session);
    const startups: number[] = [];
    for (let i = 0; i < (quick ? 1 : 3); i++) {
      const t0 = nowNs();
      const [p] = await pmgr.submitPilots([{ resource: 'local', runtimeMin: 30 }]);
      await pmgr.waitPilots({ uids: [p!.uid], states: ['PMGR_ACTIVE'], timeoutMs: 30_000 });
      startups.push(secondsBetween(t0, nowNs()) * 1000);
      if (i > 0) pmgr.cancelPilots([p!.uid]);
    }
    emit({
      metric: 'pilot_startup_ms',
      value: sig(median(startups)),
      unit: 'ms',
      runs: startups.length,
    });
    const pilot = pmgr.list()[0]!;
    tmgr.addPilots([pilot]);

    const lat: number[] = [];
    for (let i = 0; i < latencies; i++) {
      const t0 = nowNs();
      const [t] = await tmgr.submitTasks([{ executable: '/bin/true' }]);
      await tmgr.waitTasks({ uids: [t!.uid], timeoutMs: 30_000 });
      lat.push(secondsBetween(t0, nowNs()) * 1000);
    }
    lat.sort((a, b) => a - b);
    const pct = (q: number): number => lat[Math.min(lat.length - 1, Math.floor(q * lat.length))]!;
    emit({ metric: 'task_latency_ms_p50', value: sig(pct(0.5)), unit: 'ms', tasks: lat.length });
    emit({ metric: 'task_latency_ms_p99', value: sig(pct(0.99)), unit: 'ms', tasks: lat.length });

    const t0 = nowNs();
    const tasks = await tmgr.submitTasks(
      Array.from({ length: n }, () => ({ executable: '/bin/true' })),
    );
    await tmgr.waitTasks({ uids: tasks.map((t) => t.uid), timeoutMs: 600_000 });
    const secs = secondsBetween(t0, nowNs());
    const failed = tasks.filter((t) => t.state !== 'DONE').length;
    if (failed > 0) throw new Error(`e2e: ${failed} of ${n} tasks did not end DONE`);
    emit({
      metric: 'exec_tasks_per_s',
      value: sig(n / secs),
      unit: '1/s',
      tasks: n,
      cores: pilot.cores,
    });
  } finally {
    await session.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
