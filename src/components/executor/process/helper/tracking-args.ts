import { CgroupTracking, ProcTracking, TrackingError } from './tracking';
import type { Tracking, TrackingOptions } from './tracking';

/** The value after `--name` in `argv`. */
function option(argv: readonly string[], name: string): string | undefined {
  const i = argv.indexOf(`--${name}`);
  return i > 0 ? argv[i + 1] : undefined;
}

/**
 * The tracking a helper's arguments ask for: task cgroups under `--cgroup BASE` (laid out as
 * `--cgroup-limits` and `--cgroup-outer DIR` say), else /proc; `why` task cgroups were asked for
 * and cannot be had (the helper then tracks by /proc and says so in its ready event).
 */
export function trackingOf(
  argv: readonly string[],
  opts: TrackingOptions,
): { tracking: Tracking; why?: string } {
  const base = option(argv, 'cgroup');
  if (base === undefined) return { tracking: new ProcTracking(opts) };
  const outer = option(argv, 'cgroup-outer');
  const limits = argv.includes('--cgroup-limits');
  try {
    return {
      tracking: new CgroupTracking(base, opts, { limits, ...(outer ? { outer } : {}) }),
    };
  } catch (e) {
    const why = e instanceof TrackingError ? e.message : String(e);
    return { tracking: new ProcTracking(opts), why };
  }
}
