import type { ModelProfile } from '../models';
import { esc } from './html';

// The timeline's models panel (a session that ran a model router): one row per replica on the
// chart's time axis, loading (its start to ready), serving (ready to its stop), stopping (to its
// end), and a mark at each swap; drawn as SVG when the page is made, so it needs no script.

const ROW = 18;
const LABEL = 220;
const WIDTH = 1200;
const COLORS = { loading: '#f2b134', serving: '#3b8bd9', stopping: '#9aa5b1', lost: '#d9534f' };

/** What the panel's legend shows. */
export const MODEL_LEGEND: [string, string][] = [
  [COLORS.loading, 'model loading (start to ready)'],
  [COLORS.serving, 'model serving'],
  [COLORS.stopping, 'model stopping (draining, then ended)'],
  [COLORS.lost, 'replica lost (ended without being stopped)'],
];

const sec = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

/** The panel for `models`, times as ms since `origin` over `span` ms (the chart's); '' if none. */
export function modelsPanel(
  models: readonly ModelProfile[] | undefined,
  origin: number,
  span: number,
  readAt: number,
): string {
  if (models === undefined || models.length === 0) return '';
  const rows = models.flatMap((m) => m.replicas.map((r) => ({ m, r })));
  const x = (t: number): number => LABEL + ((t - origin) / span) * (WIDTH - LABEL);
  const parts: string[] = [];
  rows.forEach(({ m, r }, i) => {
    const y = i * ROW + 2;
    const end = r.ended ?? readAt;
    const label = `${m.name} ${r.id.split('.').at(-1) ?? ''} on ${r.pilot ?? '?'}`;
    parts.push(`<text x="4" y="${y + 12}">${esc(label)}</text>`);
    const bar = (from: number | undefined, to: number | undefined, color: string, what: string) => {
      if (from === undefined || to === undefined || to < from) return;
      const w = Math.max(x(to) - x(from), 1);
      parts.push(
        `<rect x="${x(from).toFixed(1)}" y="${y}" width="${w.toFixed(1)}" height="${ROW - 4}" fill="${color}"><title>${esc(`${m.name} ${r.id}: ${what} ${sec(to - from)}`)}</title></rect>`,
      );
    };
    const stop = r.stopping ?? (r.ready !== undefined ? end : undefined);
    bar(r.started, r.ready ?? r.stopping ?? end, COLORS.loading, 'loading');
    bar(r.ready, stop, COLORS.serving, 'serving');
    bar(r.stopping, end, COLORS.stopping, `stopping (${r.why ?? 'stopped'})`);
    if (r.expected === false && r.ended !== undefined) {
      parts.push(
        `<rect x="${(x(r.ended) - 2).toFixed(1)}" y="${y}" width="4" height="${ROW - 4}" fill="${COLORS.lost}"><title>${esc(`${r.id} lost: ${r.reason ?? ''}`)}</title></rect>`,
      );
    }
  });
  const height = rows.length * ROW + 4;
  for (const m of models) {
    for (const s of m.swaps) {
      parts.push(
        `<line x1="${x(s.ts).toFixed(1)}" x2="${x(s.ts).toFixed(1)}" y1="0" y2="${height}" stroke="#555" stroke-dasharray="3 3"><title>${esc(`swap: ${m.name} in, ${s.stopped.join(', ')} out`)}</title></line>`,
      );
    }
  }
  return `<h2>Models</h2>
<svg id="pf-models" role="img" aria-label="model replicas over time" viewBox="0 0 ${WIDTH} ${height}" width="100%" font-size="11" font-family="sans-serif">${parts.join('')}</svg>`;
}
