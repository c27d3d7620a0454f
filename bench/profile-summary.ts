/**
 * Where the time goes: reads the `.cpuprofile` files that `node --cpu-prof` wrote into a
 * directory and prints, per process role, self time grouped by source file and by function.
 *
 *   npm run build
 *   rm -rf /tmp/pf-prof
 *   NODE_OPTIONS='--cpu-prof --cpu-prof-dir=/tmp/pf-prof' PILOTFISH_BENCH_PEERS=0 \
 *     node dist/bench/run.js e2e
 *   node dist/bench/profile-summary.js /tmp/pf-prof [--top 15] [--exclude bench/]
 *
 * NODE_OPTIONS reaches every Node process of the run: the client (the bench itself), each
 * local agent (dist/src/agent/main.js) and the agent's spawner helpers. A profile is told
 * apart by the scripts it ran. A process killed by a signal writes no profile.
 *
 * Three views: self time by file, by function, and by component: each sample charged to the
 * nearest frame on its stack that is the repository's own code (`src/transport/bridge.js`,
 * `bench/e2e.js`), so the time spent in npm packages, Node's library and syscalls lands on the
 * part of pilotfish that asked for it.
 *
 * `--exclude PREFIX` (repeatable) leaves out samples charged to a component starting with
 * PREFIX, e.g. `bench/` for the benchmark's own set-up and clean-up (removing the session
 * directory of 5,000 task sandboxes is most of the client's busy time otherwise); what was
 * left out is reported.
 *
 * Self time of a sample is the interval to the next sample (the last one gets the mean).
 * `(idle)` is time the event loop waited; percentages are of the busy (non-idle) time.
 * Files are shown relative to the repository (`src/...`), npm packages as `npm:NAME`, Node's
 * own code as `node:...`, and V8's pseudo-frames as-is: `(garbage collector)`, `(program)`
 * (native code outside JS, e.g. syscalls made by the runtime), `(native)` for builtins.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export type Role = 'client' | 'agent' | 'spawner' | 'other';

/** The process a profile came from, from the scripts that appear in it. */
export function roleOf(p: CpuProfile): Role {
  const urls = new Set(p.nodes.map((n) => n.callFrame.url));
  const has = (suffix: string): boolean => [...urls].some((u) => u.endsWith(suffix));
  if (has('/components/executor/process/helper/main.js')) return 'spawner';
  if (has('/src/agent/main.js')) return 'agent';
  if (has('/bench/run.js') || has('/bench/memory.js')) return 'client';
  return 'other';
}

/** The group a frame's time is charged to. */
export function fileOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return url;
  const file = url.startsWith('file://') ? decodeURIComponent(url.slice('file://'.length)) : url;
  const nm = file.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = file.slice(nm + '/node_modules/'.length).split('/');
    const pkg = rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
    return `npm:${pkg}`;
  }
  for (const marker of ['/dist/src/', '/dist/bench/', '/src/', '/bench/']) {
    const i = file.lastIndexOf(marker);
    if (i >= 0) return file.slice(i + (marker.startsWith('/dist/') ? '/dist/'.length : 1));
  }
  return file;
}

function functionOf(frame: CallFrame): string {
  const name = frame.functionName === '' ? '(anonymous)' : frame.functionName;
  const file = fileOf(frame);
  if (file.startsWith('(')) return file === name ? name : `${name} ${file}`;
  return `${name} ${file}:${frame.lineNumber + 1}`;
}

/** Microseconds of self time per profile node. */
export function selfTimes(p: CpuProfile): Map<number, number> {
  const out = new Map<number, number>();
  const samples = p.samples ?? [];
  const deltas = p.timeDeltas ?? [];
  if (samples.length === 0) return out;
  const mean = (p.endTime - p.startTime) / samples.length;
  for (let i = 0; i < samples.length; i++) {
    const next = deltas[i + 1];
    const dt = next !== undefined && next >= 0 ? next : mean;
    const id = samples[i]!;
    out.set(id, (out.get(id) ?? 0) + dt);
  }
  return out;
}

export interface Summary {
  role: Role;
  profiles: number;
  totalMs: number;
  idleMs: number;
  excludedMs: number;
  byFile: [string, number][];
  byFunction: [string, number][];
  byComponent: [string, number][];
}

/** The file itself when it is the repository's own code, else undefined. */
export function componentOf(file: string): string | undefined {
  return file.startsWith('src/') || file.startsWith('bench/') ? file : undefined;
}

export function summarize(
  role: Role,
  profiles: readonly CpuProfile[],
  exclude: readonly string[] = [],
): Summary {
  const byFile = new Map<string, number>();
  const byFunction = new Map<string, number>();
  const byComponent = new Map<string, number>();
  let total = 0;
  let idle = 0;
  let excluded = 0;
  for (const p of profiles) {
    const nodes = new Map(p.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const componentCache = new Map<number, string>();
    const component = (id: number): string => {
      const cached = componentCache.get(id);
      if (cached !== undefined) return cached;
      const f = fileOf(nodes.get(id)!.callFrame);
      const up = parent.get(id);
      const c =
        componentOf(f) ??
        (up === undefined || nodes.get(up)!.callFrame.functionName === '(root)'
          ? f.startsWith('(')
            ? f
            : '(no pilotfish frame)'
          : component(up));
      componentCache.set(id, c);
      return c;
    };
    for (const [id, us] of selfTimes(p)) {
      const frame = nodes.get(id)?.callFrame;
      if (frame === undefined) continue;
      const c = component(id);
      if (exclude.some((x) => c.startsWith(x))) {
        excluded += us;
        continue;
      }
      total += us;
      if (frame.functionName === '(idle)') {
        idle += us;
        continue;
      }
      const f = fileOf(frame);
      byFile.set(f, (byFile.get(f) ?? 0) + us);
      const fn = functionOf(frame);
      byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
      byComponent.set(c, (byComponent.get(c) ?? 0) + us);
    }
  }
  const sorted = (m: Map<string, number>): [string, number][] =>
    [...m.entries()].map(([k, us]): [string, number] => [k, us / 1000]).sort((a, b) => b[1] - a[1]);
  return {
    role,
    profiles: profiles.length,
    totalMs: total / 1000,
    idleMs: idle / 1000,
    excludedMs: excluded / 1000,
    byFile: sorted(byFile),
    byFunction: sorted(byFunction),
    byComponent: sorted(byComponent),
  };
}

export function format(s: Summary, top: number): string {
  const busy = s.totalMs - s.idleMs;
  const pct = (ms: number): string => `${((100 * ms) / (busy || 1)).toFixed(1).padStart(5)}%`;
  const row = ([k, ms]: [string, number]): string =>
    `  ${ms.toFixed(0).padStart(8)} ms ${pct(ms)}  ${k}`;
  return [
    `== ${s.role}: ${s.profiles} profile(s), ${s.totalMs.toFixed(0)} ms sampled, ` +
      `${busy.toFixed(0)} ms busy, ${s.idleMs.toFixed(0)} ms idle` +
      (s.excludedMs > 0 ? `, ${s.excludedMs.toFixed(0)} ms excluded` : ''),
    ` time by component: nearest pilotfish frame on the stack (% of busy):`,
    ...s.byComponent.slice(0, top).map(row),
    ` self time by file (% of busy):`,
    ...s.byFile.slice(0, top).map(row),
    ` self time by function (% of busy):`,
    ...s.byFunction.slice(0, top).map(row),
  ].join('\n');
}

export function main(argv: readonly string[]): number {
  let top = 15;
  const dirs: string[] = [];
  const exclude: string[] = [];
  let bad = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--top') top = Number(argv[++i]);
    else if (a === '--exclude') {
      const x = argv[++i];
      if (x === undefined) bad = true;
      else exclude.push(x);
    } else dirs.push(a);
  }
  if (bad || dirs.length === 0 || !(top > 0)) {
    process.stderr.write(
      'usage: node dist/bench/profile-summary.js DIR... [--top N] [--exclude PREFIX]...\n',
    );
    return 2;
  }
  const byRole = new Map<Role, CpuProfile[]>();
  for (const dir of dirs) {
    for (const f of fs.readdirSync(dir).filter((x) => x.endsWith('.cpuprofile'))) {
      const p = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as CpuProfile;
      const role = roleOf(p);
      byRole.set(role, [...(byRole.get(role) ?? []), p]);
    }
  }
  if (byRole.size === 0) {
    process.stderr.write(`no .cpuprofile files in ${dirs.join(', ')}\n`);
    return 1;
  }
  const order: Role[] = ['client', 'agent', 'spawner', 'other'];
  const out = order
    .filter((r) => byRole.has(r))
    .map((r) => format(summarize(r, byRole.get(r)!, exclude), top));
  process.stdout.write(`${out.join('\n\n')}\n`);
  return 0;
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));
