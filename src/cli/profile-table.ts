import type { ModelProfile } from '../profile/models';
import { BUCKETS, type Account, type UtilizationReport } from '../profile/utilization';
import type { Profile } from '../profile/types';

const pct = (x: number | null): string => (x === null ? '-' : `${(100 * x).toFixed(1)}%`);

function accountLines(label: string, a: Account): string[] {
  const lines = [`  ${label}: ${a.total.toFixed(1)}`];
  for (const b of BUCKETS) {
    const share = a.total > 0 ? pct(a[b] / a.total) : '-';
    lines.push(`    ${b.padEnd(13)} ${a[b].toFixed(1).padStart(12)}  ${share.padStart(6)}`);
  }
  return lines;
}

/** `pilotfish profile` without --json: the utilization of each pilot and the tasks' end states. */
export function formatProfile(profile: Profile, report: UtilizationReport): string {
  const lines = [
    `session ${profile.session}: ${profile.pilots.length} pilots, ${profile.tasks.length} tasks`,
  ];
  for (const p of report.pilots) {
    const span = ((p.end - p.start) / 1000).toFixed(1);
    const nodes = `${p.nodes} node${p.nodes === 1 ? '' : 's'}${p.nodesInferred ? ' (read off its tasks)' : ''}`;
    lines.push(`pilot ${p.pilot}: ${nodes}, ${p.cores} cores, ${p.gpus} GPUs, ${span} s`);
    lines.push(`  utilization ${pct(p.utilization)}  efficiency ${pct(p.efficiency)}`);
    if (p.gpus > 0) {
      lines.push(
        `  GPU utilization ${pct(p.gpuUtilization)}  GPU efficiency ${pct(p.gpuEfficiency)}`,
      );
    }
    lines.push(...accountLines('core-seconds', p.coreSeconds));
    if (p.gpus > 0) lines.push(...accountLines('GPU-seconds', p.gpuSeconds));
    if (!p.check.ok) lines.push(`  buckets do not add up: relative error ${p.check.relError}`);
  }
  const states = new Map<string, number>();
  for (const t of profile.tasks) {
    const a = t.attempts[t.attempts.length - 1];
    const s = a?.final ?? a?.states[a.states.length - 1]?.state ?? 'NEW';
    states.set(s, (states.get(s) ?? 0) + 1);
  }
  lines.push('tasks:');
  for (const [s, n] of [...states].sort()) lines.push(`  ${s.padEnd(28)} ${n}`);
  if (profile.models !== undefined) lines.push(...modelLines(profile.models));
  return `${lines.join('\n')}\n`;
}

/** Per model of the router: its loads and their times, its swaps, each replica's life. */
function modelLines(models: readonly ModelProfile[]): string[] {
  const lines = ['models:'];
  for (const m of models) {
    const loads = m.replicas.flatMap((r) => (r.loadMs !== undefined ? [r.loadMs] : []));
    const times =
      loads.length > 0 ? ` (load ${sec(Math.min(...loads))} to ${sec(Math.max(...loads))})` : '';
    const lost = m.replicas.filter((r) => r.expected === false).length;
    lines.push(
      `  ${m.name}: ${m.replicas.length} replicas, ${loads.length} loaded${times}, ${m.swaps.length} swaps, ${lost} lost`,
    );
    for (const r of m.replicas) {
      const load = r.loadMs !== undefined ? `, ready in ${sec(r.loadMs)}` : ', never ready';
      const served =
        r.ready !== undefined && (r.stopping ?? r.ended) !== undefined
          ? `, served ${sec((r.stopping ?? r.ended)! - r.ready)}`
          : '';
      const end =
        r.ended !== undefined
          ? `, ended${r.why !== undefined ? ` (${r.why})` : ''}${r.expected === false ? `: ${r.reason ?? 'lost'}` : ''}`
          : '';
      lines.push(`    ${r.id} on ${r.pilot ?? '?'}${load}${served}${end}`);
    }
  }
  return lines;
}

function sec(ms: number): string {
  return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}
