import * as dag from './dag';
import * as dashboard from './dashboard';
import * as e2e from './e2e';
import * as functions from './functions';
import type { Benchmark } from './harness';
import * as memory from './memory';
import * as python from './python';
import * as router from './router';
import * as scale from './scale';
import * as scheduler from './scheduler';
import * as serve from './serve';
import * as simulate from './simulate';
import * as store from './store';
import * as timeline from './timeline';
import * as transport from './transport';
import * as utilization from './utilization';

/** Every benchmark `npm run bench` knows, in the order it runs them. Add new ones here. */
export const BENCHMARKS: readonly Benchmark[] = [
  e2e,
  dag,
  functions,
  scheduler,
  simulate,
  store,
  transport,
  memory,
  timeline,
  utilization,
  serve,
  router,
  python,
  dashboard,
  scale,
];

/** Files of bench/ that are not benchmarks. */
export const INFRASTRUCTURE = [
  'chromium',
  'cpu-prof-preload',
  'dag-dask',
  'dashboard-scenario',
  'functions-dask',
  'harness',
  'index',
  'mixed-workload',
  'process-cpu',
  'profile-summary',
  'references',
  'run',
  'synthetic-profile',
] as const;
