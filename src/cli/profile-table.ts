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
  return `${lines.join('\n')}\n`;
}
