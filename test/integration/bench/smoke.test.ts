import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { emitterFor, type EmittedFigure } from '../../../bench/harness';
import { BENCHMARKS, INFRASTRUCTURE } from '../../../bench/index';
import { peerAvailability, which, type PeerAvailability } from '../../../bench/references';
import { main } from '../../../bench/run';
import { slurmEnv } from '../../support/slurm';

// Each benchmark runs in-process with a tiny N (`quick`), so a benchmark that no longer builds,
// throws, or reports nonsense fails here instead of rotting until someone runs `npm run bench`.
// The figures themselves are not checked: performance is judged by `npm run bench`, never here.

/** The metrics each benchmark reports; docs/performance.md quotes them by name. */
const METRICS: Record<string, string[]> = {
  scheduler: ['decisions_per_s', 'ns_per_decision', 'per_decision_growth_1k_to_10k'],
  simulate: [
    'simulate_wall_s',
    'simulate_cpu_s',
    'simulate_peak_rss_mb',
    'simulated_makespan_s',
    'simulated_utilization',
    'simulated_tasks_per_wall_s',
  ],
  e2e: [
    ...['stream', 'shared', 'files', 'insecure'].flatMap((s) => [
      `pilot_startup_ms_${s}`,
      `pilot_startup_phase_ms_${s}`,
      `pilot_startup_outside_agent_ms_${s}`,
      `task_latency_ms_p50_${s}`,
      `task_latency_ms_p99_${s}`,
      `exec_tasks_per_s_${s}`,
      `exec_tasks_per_s_steady_${s}`,
      `client_cpu_us_per_task_${s}`,
      `client_cpu_us_per_task_steady_${s}`,
      `profile_complete_fraction_${s}`,
    ]),
    'encryption_tasks_per_s_ratio',
    'own_dir_tasks_per_s_ratio',
    'own_dir_tasks_per_s_ratio_steady',
    // the C helper, or xargs where there is no C compiler: always there
    'spawn_limit_per_s',
    'exec_vs_spawn_limit_stream',
    'exec_vs_spawn_limit_files',
    'exec_steady_vs_spawn_limit_stream',
    'exec_steady_vs_spawn_limit_files',
  ],
  // edge_latency_ms_p50/_p90 and edge_latency_loaded_ms_p50 are whole milliseconds: skipped
  // (with a reason) on a machine where an edge takes under 1 ms, so not asked for here
  dag: [
    'edge_latency_ms_mean',
    'added_latency_per_edge_ms',
    'independent_tasks_per_s',
    'dag_tasks_per_s',
    'dag_vs_independent',
  ],
  functions: [
    'function_tasks_per_s',
    'function_round_trip_ms_p50',
    'function_round_trip_ms_p99',
    'function_round_trip_cold_ms_p50',
    'client_cpu_us_per_task',
  ],
  store: ['notifications_per_s', 'open_10m_ms'],
  transport: ['bulk100_tasks_per_s', 'single_msgs_per_s'],
  memory: ['client_rss_mb_per_100k_tasks'],
  // timeline_render_ms_100k needs Chromium (scripts/system-deps.sh installs it)
  timeline: [
    'timeline_html_ms_100k',
    'timeline_html_mb_100k',
    'timeline_render_ms_100k',
    'accounting_ms_1m_attempts',
    'accounting_cpu_ms_1m_attempts',
  ],
  // its Slurm reference is not run quick (it starts a Slurm of its own)
  utilization: ['utilization', 'efficiency', 'makespan_s'],
  serve: [
    'http_exec_tasks_per_s',
    'inprocess_exec_tasks_per_s',
    'http_vs_inprocess',
    'submit_rtt_ms_p50',
    'submit_rtt_ms_p99',
    'submit_rtt_cold_ms_p50',
    'accept_tasks_per_s',
    'accept_cold_tasks_per_s',
    'accept_ms_per_batch_p50',
    'events_per_s_1_client',
    'events_per_s_100_clients',
  ],
  // the added latencies may be skipped in a quick run (noise below direct's)
  router: [
    'handoff_answered_fraction',
    'direct_latency_ms_p50',
    'router_requests_per_s',
    'swap_added_ms_p50',
  ],
  python: [
    'python_remote_calls_per_s',
    'python_remote_round_trip_ms_p50',
    'python_remote_round_trip_ms_p99',
  ],
  // needs Chromium (scripts/system-deps.sh installs it)
  dashboard: [
    'dashboard_tasks_first_paint_ms',
    'dashboard_failed_first_paint_ms',
    'dashboard_update_ms_p50',
    'dashboard_update_ms_p99',
    'dashboard_repaint_ms_p50',
    'tasks_page_ms_p50',
  ],
  // on the lab Slurm cluster only (SLURM_BENCHMARKS); its model_* costs may see no CPU tick quick
  scale: [
    'scale_tasks_per_s',
    'scale_growth',
    'scale_tasks_per_s_no_subagents',
    'scale_subagents_vs_none',
    'simulated_scale_tasks_per_s',
    'simulated_scale_tasks_per_s_no_subagents',
    'simulated_subagents_vs_none',
    'simulated_lab_tasks_per_s',
    'simulated_lab_tasks_per_s_no_subagents',
  ],
};

/** Benchmarks that run on the lab Slurm cluster (scripts/slurm-up.sh): without it, no figure. */
const SLURM_BENCHMARKS = ['scale'];

/**
 * Peer figures, by benchmark, expected only where the peer is installed: quick runs never
 * install (scripts/bench-deps.sh needs root and apt; `npm run bench` runs it), and a peer that
 * is missing is reported skipped on stderr with no figure (bench/references.ts).
 */
const PEER_METRICS: Record<string, Partial<Record<keyof PeerAvailability, string[]>>> = {
  e2e: {
    parallel: [
      'gnu_parallel_tasks_per_s',
      'exec_vs_gnu_parallel_stream',
      'exec_vs_gnu_parallel_files',
    ],
    dask: ['dask_tasks_per_s', 'exec_vs_dask_stream', 'exec_vs_dask_files'],
  },
  router: { nginx: ['nginx_requests_per_s', 'router_vs_nginx'] },
  python: { dask: ['dask_map_calls_per_s', 'dask_round_trip_ms_p50', 'python_vs_dask'] },
  functions: {
    dask: [
      'dask_function_tasks_per_s',
      'dask_round_trip_ms_p50',
      'dask_round_trip_ms_p99',
      'functions_vs_dask',
    ],
  },
  dag: {
    dask: [
      'dask_edge_latency_ms_p50',
      'dask_edge_latency_ms_p90',
      'dask_added_latency_per_edge_ms',
      'dask_independent_tasks_per_s',
      'dask_dag_tasks_per_s',
      'dag_vs_dask',
    ],
  },
};

/** Figures of `e2e` from the C helper alone (no xargs stand-in): where a C compiler is. */
const C_HELPER_METRICS = [
  'sandbox_spawn_limit_per_s',
  'exec_vs_sandbox_spawn_limit_stream',
  'exec_vs_sandbox_spawn_limit_files',
  'exec_steady_vs_sandbox_spawn_limit_stream',
  'exec_steady_vs_sandbox_spawn_limit_files',
];
const hasCompiler = ['cc', 'gcc', 'clang'].some((c) => which(c) !== undefined);

/** Benchmarks that start pilots, peers or child processes get more than the default 10 s. */
const TIMEOUT_MS: Record<string, number> = {
  e2e: 60_000,
  dag: 60_000,
  functions: 60_000,
  memory: 60_000,
  timeline: 60_000,
  utilization: 60_000,
  serve: 60_000,
  router: 60_000,
  python: 60_000,
  dashboard: 90_000,
  scale: 180_000,
};

describe('bench/', () => {
  it('registers every benchmark module of bench/ and no other', () => {
    const dir = path.join(__dirname, '../../../bench');
    const modules = fs
      .readdirSync(dir)
      .filter((f) => f.endsWith('.ts'))
      .map((f) => f.slice(0, -'.ts'.length))
      .filter((m) => !(INFRASTRUCTURE as readonly string[]).includes(m));
    expect(BENCHMARKS.map((b) => b.name).sort()).toEqual(modules.sort());
    expect(Object.keys(METRICS).sort()).toEqual(modules.sort());
  });

  for (const b of BENCHMARKS) {
    it(
      `${b.name} (quick) emits its figures, each a finite positive number with bench, metric and unit`,
      async () => {
        const absent: string[] = [];
        const expected: string[] = [];
        // without the lab cluster a Slurm benchmark emits nothing (and says why on stderr)
        const lab = !SLURM_BENCHMARKS.includes(b.name) || slurmEnv() !== undefined;
        (lab ? expected : absent).push(...(METRICS[b.name] ?? []));
        if (b.name === 'e2e') (hasCompiler ? expected : absent).push(...C_HELPER_METRICS);
        const peerMetrics = PEER_METRICS[b.name];
        if (
          peerMetrics !== undefined &&
          !['0', 'false', 'no'].includes(process.env.PILOTFISH_BENCH_PEERS ?? '')
        ) {
          const peers = await peerAvailability();
          for (const [peer, metrics] of Object.entries(peerMetrics)) {
            if (peers[peer as keyof PeerAvailability] === undefined) expected.push(...metrics);
            else absent.push(...metrics);
          }
        }
        const figures: EmittedFigure[] = [];
        await b.run({ quick: true, emit: emitterFor(b.name, (f) => figures.push(f)) });
        const metrics = figures.map((f) => f.metric);
        expect(metrics).toEqual(expect.arrayContaining(expected));
        // a skipped peer emits nothing, not a placeholder
        for (const m of absent) expect(metrics).not.toContain(m);
        for (const f of figures) {
          expect(f.bench).toBe(b.name);
          expect(typeof f.metric).toBe('string');
          expect(f.metric).toMatch(/^[a-z0-9_]+$/);
          expect(typeof f.unit).toBe('string');
          expect(f.unit.length).toBeGreaterThan(0);
          expect(Number.isFinite(f.value)).toBe(true);
          expect(f.value).toBeGreaterThan(0);
          expect(f.node).toBe(process.version);
          // one JSON line per figure
          const line = JSON.stringify(f);
          expect(line).not.toContain('\n');
          expect(JSON.parse(line)).toEqual(f);
        }
        // every task of the run has every state's real time in the store (issue 17)
        for (const f of figures.filter((x) => x.metric.startsWith('profile_complete_fraction'))) {
          expect(f.value).toBe(1);
        }
      },
      TIMEOUT_MS[b.name],
    );
  }

  it('refuses an unknown benchmark with exit status 2, naming the known ones', async () => {
    const err: string[] = [];
    const out: string[] = [];
    const code = await main(['transport', 'nope'], {
      stdout: (l) => out.push(l),
      stderr: (l) => err.push(l),
    });
    expect(code).toBe(2);
    expect(out).toEqual([]);
    expect(err.join('\n')).toContain(
      `unknown benchmark 'nope'; known: e2e, dag, functions, scheduler, simulate, store, transport, memory, timeline`,
    );
  });

  it('runs only the named benchmarks and prints one JSON figure per stdout line', async () => {
    const out: string[] = [];
    const code = await main(['--quick', 'transport'], {
      stdout: (l) => out.push(l),
      stderr: () => undefined,
    });
    expect(code).toBe(0);
    const figures = out.map((l) => JSON.parse(l) as EmittedFigure);
    expect(figures.map((f) => [f.bench, f.metric, f.quick])).toEqual([
      ['transport', 'bulk100_tasks_per_s', true],
      ['transport', 'single_msgs_per_s', true],
    ]);
  });

  it('reports a benchmark that throws with exit status 1 and still runs the others', async () => {
    const err: string[] = [];
    const out: string[] = [];
    const broken = {
      name: 'broken',
      description: 'throws',
      run: () => Promise.reject(new Error('boom')),
    };
    const fine = {
      name: 'fine',
      description: 'one figure',
      run: ({ emit }: { emit: (f: { metric: string; value: number; unit: string }) => void }) => {
        emit({ metric: 'x', value: 1, unit: '1/s' });
        return Promise.resolve();
      },
    };
    const code = await main([], { stdout: (l) => out.push(l), stderr: (l) => err.push(l) }, [
      broken,
      fine,
    ]);
    expect(code).toBe(1);
    expect(err.join('\n')).toContain('bench broken: FAILED: Error: boom');
    expect(out.map((l) => (JSON.parse(l) as EmittedFigure).bench)).toEqual(['fine']);
  });
});
