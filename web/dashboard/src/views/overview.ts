// Overview: the pilots with their cores and GPUs in use, the tasks per state now and over time,
// the throughput, and the failures by reason code (each a link to the tasks it counts).
import type { PilotStatus, SessionStatus } from '../../../../src/generated';
import { getJson } from '../api';
import { h, number, s } from '../dom';
import { phaseOf, TASK_STATES } from '../model';
import { poll, type View } from './view';

const PHASES = ['pending', 'running', 'finishing', 'done', 'failed', 'canceled'] as const;
type Phase = (typeof PHASES)[number];
const SERIES: readonly Phase[] = ['pending', 'running', 'done', 'failed'];
const KEEP = 600; // samples: ten minutes at one a second

interface Sample {
  at: number;
  by: Record<Phase, number>;
  ended: number;
}

export function overviewView(): View {
  const stop = new AbortController();
  const samples: Sample[] = [];
  const head = h('p', { class: 'muted' }, 'loading…');
  const pilots = h('div');
  const counts = h('div', { class: 'chips' });
  const chart = h('div', {
    class: 'chart',
    role: 'img',
    'aria-label': 'tasks per state over time',
  });
  const legend = h(
    'p',
    { class: 'legend', 'aria-hidden': 'true' },
    ...SERIES.map((p) => h('span', {}, h('i', { class: `ph-${p}` }), p)),
  );
  const scale = h('span', { class: 'muted' });
  const rate = h('p', { class: 'rate' });
  const failures = h('div');
  const element = h(
    'section',
    { class: 'overview' },
    h('h2', {}, 'Overview'),
    head,
    h('h3', {}, 'Pilots'),
    pilots,
    h('h3', {}, 'Tasks'),
    counts,
    chart,
    legend,
    h('p', { class: 'muted' }, 'tasks per state since this page opened ', scale),
    rate,
    h('h3', {}, 'Failures by reason'),
    failures,
  );

  poll(
    1000,
    async (signal) => {
      let st: SessionStatus;
      try {
        st = await getJson<SessionStatus>('/v1/status?pending=0&running=0', signal);
      } catch (e) {
        head.textContent = `cannot read the session's status: ${String(e)}`;
        throw e;
      }
      const by = Object.fromEntries(PHASES.map((p) => [p, 0])) as Record<Phase, number>;
      for (const [state, n] of Object.entries(st.counts)) by[phaseOf(state)] += n ?? 0;
      samples.push({ at: Date.now(), by, ended: by.done + by.failed + by.canceled });
      if (samples.length > KEEP) samples.shift();
      head.textContent = `session ${st.session}: ${st.state}, ${number(st.total)} tasks`;
      pilots.replaceChildren(pilotTable(st));
      counts.replaceChildren(...countChips(by, st));
      chart.replaceChildren(countChart(samples));
      scale.textContent = scaleOf(samples);
      rate.textContent = throughput(samples);
      failures.replaceChildren(failureTable(st.failures ?? {}));
    },
    stop.signal,
  );
  return { element, close: () => stop.abort() };
}

function pilotTable(st: SessionStatus): HTMLElement {
  if (st.pilots.length === 0) return h('p', { class: 'muted' }, 'no pilots');
  return h(
    'table',
    { class: 'pilots' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ...['pilot', 'state', 'resource', 'cores in use', 'GPUs in use'].map((c) =>
          h('th', { scope: 'col' }, c),
        ),
      ),
    ),
    h(
      'tbody',
      {},
      ...st.pilots.map((p) =>
        h(
          'tr',
          { 'data-pilot': p.uid },
          h(
            'th',
            { scope: 'row' },
            h('a', { href: `#/tasks?pilot=${encodeURIComponent(p.uid)}` }, p.uid),
          ),
          h('td', {}, p.state, ...livenessBadges(p)),
          h('td', {}, p.resource),
          h('td', {}, use(p.busyCores ?? 0, p.cores, `${p.uid} cores in use`)),
          h('td', {}, p.gpus > 0 ? use(p.busyGpus ?? 0, p.gpus, `${p.uid} GPUs in use`) : '–'),
        ),
      ),
    ),
  );
}

/** UNKNOWN while its agent is silent, and how many of its parts are (names in the title). */
function livenessBadges(p: PilotStatus): HTMLElement[] {
  const l = p.liveness;
  if (l === undefined) return [];
  const out: HTMLElement[] = [];
  if (l.state === 'unknown') {
    const since = l.since !== undefined ? new Date(l.since).toLocaleTimeString() : '?';
    out.push(
      h('span', { class: 'badge unknown', title: `no heartbeat since ${since}` }, 'UNKNOWN'),
    );
  }
  if (l.silentParts.length > 0) {
    const names = l.silentParts.map((x) => x.part).join(', ');
    out.push(h('span', { class: 'badge', title: names }, `${l.silentParts.length} silent`));
  }
  return out;
}

function use(busy: number, all: number, label: string): HTMLElement {
  return h(
    'span',
    { class: 'use' },
    h('meter', { min: 0, max: Math.max(all, 1), value: busy, 'aria-label': label }),
    ` ${number(busy)} / ${number(all)}`,
  );
}

function countChips(by: Record<Phase, number>, st: SessionStatus): HTMLElement[] {
  const statesOf = (p: Phase): string => TASK_STATES.filter((x) => phaseOf(x) === p).join(',');
  const chips = PHASES.map((p) =>
    h(
      'a',
      { class: `chip ph-${p}`, href: `#/tasks?state=${statesOf(p)}`, 'data-phase': p },
      h('span', { class: 'n' }, number(by[p])),
      ` ${p}`,
    ),
  );
  const detail = h(
    'details',
    {},
    h('summary', {}, 'per state'),
    h(
      'table',
      { class: 'states' },
      h(
        'tbody',
        {},
        ...TASK_STATES.filter((x) => (st.counts[x] ?? 0) > 0).map((x) =>
          h(
            'tr',
            {},
            h('th', { scope: 'row' }, h('a', { href: `#/tasks?state=${x}` }, x)),
            h('td', {}, number(st.counts[x] ?? 0)),
          ),
        ),
      ),
    ),
  );
  return [...chips, detail];
}

/** Tasks per phase since the page opened: one line each, on one scale. */
function countChart(samples: readonly Sample[]): SVGElement {
  const W = 600;
  const H = 140;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', class: 'counts' });
  if (samples.length < 2) return svg;
  const t0 = samples[0]!.at;
  const span = Math.max(samples[samples.length - 1]!.at - t0, 1);
  let max = 1;
  for (const x of samples) for (const p of SERIES) max = Math.max(max, x.by[p]);
  SERIES.forEach((p, j) => {
    // each line a little above the one before: equal counts do not hide each other
    const base = H - 2 - j * 2;
    const d = samples
      .map(
        (x, i) =>
          `${i === 0 ? 'M' : 'L'}${(((x.at - t0) / span) * W).toFixed(1)} ${(base - (x.by[p] / max) * (H - 12)).toFixed(1)}`,
      )
      .join('');
    svg.append(s('path', { d, class: `line ph-${p}`, 'vector-effect': 'non-scaling-stroke' }));
  });
  svg.append(s('title', {}, `up to ${number(max)} tasks, over ${(span / 1000).toFixed(0)} s`));
  return svg;
}

/** What the chart's height and width stand for. */
function scaleOf(samples: readonly Sample[]): string {
  if (samples.length < 2) return '(drawn from the next second on)';
  let max = 1;
  for (const x of samples) for (const p of SERIES) max = Math.max(max, x.by[p]);
  const span = (samples[samples.length - 1]!.at - samples[0]!.at) / 1000;
  return `(top: ${number(max)} tasks; ${span.toFixed(0)} s wide)`;
}

/** Tasks ended per second over the last ten seconds seen, and since the page opened. */
function throughput(samples: readonly Sample[]): string {
  if (samples.length < 2) return '';
  const last = samples[samples.length - 1]!;
  const back = samples.find((x) => last.at - x.at <= 10_000) ?? samples[0]!;
  const recent = back === last ? 0 : ((last.ended - back.ended) * 1000) / (last.at - back.at);
  const first = samples[0]!;
  const all = ((last.ended - first.ended) * 1000) / Math.max(last.at - first.at, 1);
  return `throughput: ${recent.toFixed(1)} tasks/s (last 10 s), ${all.toFixed(1)} tasks/s since this page opened`;
}

function failureTable(failures: Record<string, number>): HTMLElement {
  const rows = Object.entries(failures).sort((a, b) => b[1] - a[1]);
  if (rows.length === 0) return h('p', { class: 'muted' }, 'none failed');
  return h(
    'table',
    { class: 'failures' },
    h(
      'thead',
      {},
      h('tr', {}, h('th', { scope: 'col' }, 'reason'), h('th', { scope: 'col' }, 'tasks')),
    ),
    h(
      'tbody',
      {},
      ...rows.map(([code, n]) =>
        h(
          'tr',
          {},
          h('th', { scope: 'row' }, h('a', { href: `#/tasks?state=FAILED&reason=${code}` }, code)),
          h('td', {}, number(n)),
        ),
      ),
    ),
  );
}
