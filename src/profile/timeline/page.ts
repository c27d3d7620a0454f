import type { Profile } from '../types';
import { BUCKETS, type PilotUtilization } from '../utilization';
import { CLIENT_JS } from './client';
import { timelineData, type TimelineData } from './data';
import { esc } from './html';
import { MODEL_LEGEND, modelsPanel } from './models-panel';

const CSS = `
body { font: 13px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 16px; color: #1f2328; }
h1 { font-size: 17px; margin: 0 0 8px; }
table.summary { border-collapse: collapse; margin: 6px 0 10px; font-variant-numeric: tabular-nums; }
table.summary th, table.summary td { padding: 2px 8px; text-align: right; border-bottom: 1px solid #e3e6ea; }
table.summary th:first-child, table.summary td:first-child { text-align: left; }
.legend { display: flex; flex-wrap: wrap; gap: 14px; margin: 6px 0 8px; }
.legend span { display: inline-flex; align-items: center; gap: 5px; }
.legend i { width: 14px; height: 10px; display: inline-block; border-radius: 2px; box-shadow: inset 0 0 0 1px rgba(0,0,0,.15); }
.hint { color: #656d76; }
#pf-chart { width: 100%; user-select: none; }
#pf-tip { position: absolute; display: none; background: #fff; border: 1px solid #c9ced4; border-radius: 4px;
  padding: 6px 8px; box-shadow: 0 2px 8px rgba(0,0,0,.15); max-width: 360px; pointer-events: none; font-size: 12px; }
.tip-uid { font-weight: 600; font-family: ui-monospace, monospace; }
.tip-reason { color: #b3261e; }
rect.lane { fill: #f6f7f9; } rect.lane.odd { fill: #eef0f3; } rect.lane.gpu { fill: #f3f0f8; }
.lane-label, .band-label, .band-note { font-size: 10px; text-anchor: end; fill: #57606a; }
.band-label { font-size: 11px; fill: #1f2328; }
.tick { font-size: 10px; text-anchor: middle; fill: #57606a; }
line.grid { stroke: #d0d7de; stroke-width: 0.5; } line.node-sep { stroke: #8c959f; stroke-width: 0.7; }
rect.band { fill: #fafbfc; stroke: #e3e6ea; }
path.phase { shape-rendering: crispEdges; stroke: none; }
.phase-scheduling { fill: #f2b134; } .phase-launching { fill: #8e6bd6; }
.task-label { fill: #fff; pointer-events: none; font-family: ui-monospace, monospace; }
.phase-running { fill: #2e7dd7; } .phase-tearingDown { fill: #e4572e; }
rect.pilot-0 { fill: #d0d7de; } rect.pilot-1 { fill: #f5d48a; } rect.pilot-2 { fill: #9bd3ae; } rect.pilot-3 { fill: #a9b8cc; }
path.util { fill: none; stroke-width: 1.2; } .util-cores { stroke: #2e7dd7; } .util-gpus { stroke: #8e6bd6; stroke-dasharray: 3 2; }
path.count { fill: none; stroke-width: 1.4; }
.count-pending { stroke: #8c959f; } .count-running { stroke: #2e7dd7; } .count-done { stroke: #2a9d4b; } .count-failed { stroke: #d93025; }
rect.highlight { fill: none; stroke: #111; stroke-width: 1.2; pointer-events: none; }
`;

const LEGEND: [string, string][] = [
  ['#f2b134', 'scheduling (slots allocated, not yet executing)'],
  ['#8e6bd6', 'launching'],
  ['#2e7dd7', "running (the task's own command)"],
  ['#e4572e', 'tearing down (until its slots are released)'],
  ['#f6f7f9', 'idle'],
];
const PILOT_LEGEND: [string, string][] = [
  ['#d0d7de', 'pilot: waiting for its job'],
  ['#f5d48a', 'starting up'],
  ['#9bd3ae', 'active'],
  ['#a9b8cc', 'draining'],
];
const COUNT_LEGEND: [string, string][] = [
  ['#8c959f', 'pending'],
  ['#2e7dd7', 'running'],
  ['#2a9d4b', 'done'],
  ['#d93025', 'failed or canceled'],
];

const pct = (x: number | null): string => (x === null ? '-' : `${(100 * x).toFixed(1)}%`);

function summary(pilots: PilotUtilization[]): string {
  const head = ['pilot', 'cores', 'GPUs', 'core-s', 'utilization', 'efficiency', ...BUCKETS];
  const rows = pilots.map((p) => {
    const c = p.coreSeconds;
    const share = BUCKETS.map((b) => (c.total > 0 ? pct(c[b] / c.total) : '-'));
    const cells = [
      p.pilot,
      p.cores,
      p.gpus,
      c.total.toFixed(1),
      pct(p.utilization),
      pct(p.efficiency),
      ...share,
    ];
    return `<tr>${cells.map((x) => `<td>${esc(String(x))}</td>`).join('')}</tr>`;
  });
  return `<table class="summary"><tr>${head.map((h) => `<th>${h}</th>`).join('')}</tr>${rows.join('')}</table>`;
}

const legend = (items: [string, string][]): string =>
  `<div class="legend">${items.map(([c, t]) => `<span><i style="background:${c}"></i>${esc(t)}</span>`).join('')}</div>`;

const b64 = (a: ArrayBufferView): string =>
  Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('base64');

/** The page's embedded data: typed arrays as base64, `<` escaped so that no string ends the script. */
function embedded(d: TimelineData): string {
  const { times, laneStart, laneList, taskOf, attemptNo, stateOf, report: _report, ...rest } = d;
  const json = JSON.stringify({
    ...rest,
    times: b64(times),
    laneStart: b64(laneStart),
    laneList: b64(laneList),
    taskOf: b64(taskOf),
    attemptNo: b64(attemptNo),
    stateOf: b64(stateOf),
  });
  return json.replace(/</g, '\\u003c');
}

/** The models panel, on the chart's origin, as long as the latest replica's end asks. */
function models(profile: Profile, origin: number, span: number): string {
  if (profile.models === undefined) return '';
  let end = origin + span;
  for (const m of profile.models) {
    for (const r of m.replicas) end = Math.max(end, r.ended ?? profile.readAt);
  }
  const panel = modelsPanel(profile.models, origin, end - origin, profile.readAt);
  return `${panel}\n${legend(MODEL_LEGEND)}`;
}

/**
 * The timeline of a session as one self-contained HTML file: no network, no external script or
 * font. docs/profiling.md says how to read it.
 */
export function renderTimeline(profile: Profile): string {
  const d = timelineData(profile);
  const when = new Date(d.origin).toISOString();
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>pilotfish timeline: ${esc(d.session)}</title>
<style>${CSS}</style></head><body>
<h1>pilotfish timeline: ${esc(d.session)}</h1>
<div class="hint">${profile.tasks.length} tasks, ${d.held} attempts that held slots, ${d.lanes.length} lanes; times from ${esc(when)}.
Hover a task for its phases; wheel to zoom, drag to pan, double-click to reset.</div>
${summary(d.report.pilots)}
${legend(LEGEND)}${legend(PILOT_LEGEND)}${legend(COUNT_LEGEND)}
<div id="pf-chart"></div><div id="pf-tip"></div>
${models(profile, d.origin, d.span)}
<script type="application/json" id="pf-data">${embedded(d)}</script>
<script>${CLIENT_JS}</script>
</body></html>
`;
}
