import type { Benchmark } from './harness';
import * as scheduler from './scheduler';
import * as transport from './transport';

/** Every benchmark `npm run bench` knows, in the order it runs them. Add new ones here. */
export const BENCHMARKS: readonly Benchmark[] = [scheduler, transport];

/** Files of bench/ that are not benchmarks. */
export const INFRASTRUCTURE = ['harness', 'index', 'run'] as const;
