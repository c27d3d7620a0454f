import type { SessionStatus } from '../client/control/protocol';
import type { PilotStatus, RouterStatus } from '../generated';
import type { Explanation } from '../client/tasks/explain';
import { TASK_STATES } from '../states/task-model';

/** `3.2 s`, `4 min`, `2.5 h`, `3 d`: an age or a duration for people. */
export function formatAge(ms: number): string {
  const s = Math.max(0, ms) / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  if (s < 86_400) return `${(s / 3600).toFixed(1)} h`;
  return `${(s / 86_400).toFixed(1)} d`;
}

/** `14:03:12`: a time of day for people (the local time zone). */
export function clockTime(ms: number): string {
  return new Date(ms).toLocaleTimeString('en-GB', { hour12: false });
}

/**
 * One line of a waiting or ended task: its state, why, and when it is expected to start (with
 * `full`, also why it has no estimate).
 */
export function explanationLine(e: Explanation, now: number, full = false): string {
  const since = e.since !== undefined ? ` for ${formatAge(now - e.since)}` : '';
  const name = e.name !== undefined ? ` (${e.name})` : '';
  const attempt = e.attempt > 1 ? `, attempt ${e.attempt}` : '';
  const pilot = e.pilot !== undefined ? ` on ${e.pilot}` : '';
  let why = '';
  if (e.waiting !== undefined) why = `: ${e.waiting.message}`;
  else if (e.reason !== undefined) why = `: ${e.reason.code}: ${e.reason.message}`;
  return `${e.uid}${name} ${e.state}${since}${pilot}${attempt}${why}${estimate(e, now, full)}`;
}

/** `; estimated start in 2 min (14:03:12)`, or why there is none when `full`. */
function estimate(e: Explanation, now: number, full: boolean): string {
  if (e.estimatedStart !== undefined) {
    const clock = clockTime(e.estimatedStart);
    const when =
      e.estimatedStart <= now ? 'any moment (overdue)' : `in ${formatAge(e.estimatedStart - now)}`;
    return `; estimated start ${when} (${clock})`;
  }
  return full && e.noEstimate !== undefined ? `; ${e.noEstimate}` : '';
}

/** `pilotfish status` for people. */
export function formatStatus(st: SessionStatus, now: number): string {
  const lines: string[] = [];
  const pid = st.pid !== undefined ? `, pid ${st.pid}` : '';
  lines.push(`session ${st.session} (${st.state}${pid})`);
  lines.push(st.pilots.length === 0 ? 'pilots: none' : 'pilots:');
  for (const p of st.pilots) {
    const gpus = p.gpus > 0 ? `, ${p.gpus} GPUs` : '';
    const why = p.reason !== undefined ? `: ${p.reason.code}: ${p.reason.message}` : '';
    const state = `${p.state}${silence(p, now)}`;
    lines.push(`  ${p.uid}  ${p.resource}  ${state}  ${p.cores} cores${gpus}${why}`);
    for (const w of p.warnings ?? []) lines.push(`    warning: ${w}`);
    for (const x of p.liveness?.silentParts ?? []) {
      lines.push(`    silent: ${x.part} since ${clockTime(x.since)}, ${formatAge(now - x.since)}`);
    }
  }
  lines.push(`tasks: ${st.total}`);
  const width = Math.max(0, ...Object.keys(st.counts).map((s) => s.length));
  for (const s of TASK_STATES) {
    const n = st.counts[s];
    if (n !== undefined) lines.push(`  ${s.padEnd(width)} ${n}`);
  }
  if (st.runningTotal > 0) {
    const of = st.running.length < st.runningTotal ? ` (first ${st.running.length})` : '';
    lines.push(`running: ${st.runningTotal}${of}`);
    for (const t of st.running) {
      const name = t.name !== undefined ? ` (${t.name})` : '';
      const on = t.pilot !== undefined ? ` on ${t.pilot}` : '';
      const since = t.since !== undefined ? ` for ${formatAge(now - t.since)}` : '';
      lines.push(`  ${t.uid}${name}${on}${since}`);
    }
  }
  if (st.pendingTotal > 0) {
    const of = st.pending.length < st.pendingTotal ? `, the oldest ${st.pending.length}` : '';
    lines.push(`pending: ${st.pendingTotal}${of}`);
    for (const e of st.pending) lines.push(`  ${explanationLine(e, now)}`);
  }
  for (const r of st.routers ?? []) lines.push(...routerLines(r, st.state));
  return lines.join('\n') + '\n';
}

/** ` (UNKNOWN: silent since 12:03:04, 7.0 s)` for a pilot whose agent is silent, else ''. */
function silence(p: PilotStatus, now: number): string {
  const l = p.liveness;
  if (l?.state !== 'unknown') return '';
  const since =
    l.since !== undefined
      ? `: silent since ${clockTime(l.since)}, ${formatAge(now - l.since)}`
      : '';
  return ` (UNKNOWN${since})`;
}

/**
 * A model router: per model, its replicas (state, where, in flight), its queue, and what it
 * did (loads and their times, swaps, replicas lost, requests served).
 */
function routerLines(r: RouterStatus, state: SessionStatus['state']): string[] {
  const lines = [`router${r.url !== undefined ? ` ${r.url}` : ''}: ${r.models.length} models`];
  const ended = state !== 'live' && state !== 'closing';
  for (const m of r.models) {
    const now = ended
      ? ''
      : `${m.replicas.length} replicas, ${m.queued} queued, ${m.inFlight} in flight; `;
    const load =
      m.loads > 0
        ? `${m.loads} loads (last ${ms(m.lastLoadMs!)}, mean ${ms(m.meanLoadMs!)}, max ${ms(m.maxLoadMs!)})`
        : 'never loaded';
    const served = m.served !== undefined ? `, ${m.served} served` : '';
    lines.push(`  ${m.name}: ${now}${load}, ${m.swaps} swaps, ${m.lost} lost${served}`);
    for (const x of m.replicas) {
      const node = x.node !== undefined ? ` node ${x.node}` : '';
      const at = x.endpoint !== undefined ? ` at ${x.endpoint}` : '';
      lines.push(`    ${x.id} ${x.state} on ${x.pilot}${node}${at}, ${x.inFlight} in flight`);
    }
  }
  return lines;
}

/** `850 ms`, `12.3 s`: a load time. */
function ms(v: number): string {
  return v < 1000 ? `${Math.round(v)} ms` : `${(v / 1000).toFixed(1)} s`;
}

/** One line that changes when the session does (`status --watch` off a terminal). */
export function statusLine(st: SessionStatus): string {
  const counts = TASK_STATES.filter((s) => st.counts[s] !== undefined)
    .map((s) => `${s}=${st.counts[s]}`)
    .join(' ');
  const pilots = st.pilots.map((p) => `${p.uid}=${p.state}${livenessTag(p)}`).join(' ');
  return `${st.state} tasks=${st.total} ${counts}${pilots !== '' ? ` | ${pilots}` : ''}`;
}

/** `(UNKNOWN)`, `(2 parts silent)`, both, or '' (a line that changes only with them). */
function livenessTag(p: PilotStatus): string {
  const l = p.liveness;
  const tags = [
    ...(l?.state === 'unknown' ? ['UNKNOWN'] : []),
    ...(l !== undefined && l.silentParts.length > 0
      ? [`${l.silentParts.length} part${l.silentParts.length > 1 ? 's' : ''} silent`]
      : []),
  ];
  return tags.length > 0 ? `(${tags.join(', ')})` : '';
}
