// One task: its state and reason, its history with real times, what it waits for and when it
// is expected to start, its output following live, its result, and cancel (for a token that
// may submit: a read token is shown no such button).
import type { Explanation, HistoryEntry, TaskDetail, Whoami } from '../../../../src/generated';
import { follow, getJson, postJson } from '../api';
import { announce, clock, duration, h, stateClass } from '../dom';
import { poll, type View } from './view';

/** The most output a view keeps of each stream (the oldest goes first). */
const KEEP_CHARS = 2_000_000;

export function taskView(uid: string, who: Whoami): View {
  const stop = new AbortController();
  const path = `/v1/tasks/${encodeURIComponent(uid)}`;
  const head = h('div', { class: 'task-head' }, h('p', { class: 'muted' }, 'loading…'));
  const waits = h('div', { class: 'waits' });
  const history = h('div');
  const result = h('div');
  const element = h(
    'section',
    { class: 'task' },
    h('p', {}, h('a', { href: '#/tasks' }, '← tasks')),
    h('h2', {}, 'Task ', h('code', {}, uid)),
    head,
    waits,
    h('h3', {}, 'History'),
    history,
    h('h3', {}, 'Output'),
    output(uid, 'stdout', stop.signal),
    output(uid, 'stderr', stop.signal),
    result,
  );
  let final = false;
  poll(
    1000,
    async (signal) => {
      if (final) return;
      let t: TaskDetail;
      try {
        t = await getJson<TaskDetail>(path, signal);
      } catch (e) {
        head.replaceChildren(h('p', { class: 'error', role: 'alert' }, String(e)));
        throw e;
      }
      final = t.final;
      head.replaceChildren(summary(t, who, path));
      waits.replaceChildren(...waiting(t));
      history.replaceChildren(historyTable(t.history));
      result.replaceChildren(...resultOf(t));
    },
    stop.signal,
  );
  return { element, close: () => stop.abort() };
}

function summary(t: TaskDetail, who: Whoami, path: string): HTMLElement {
  const dl = h(
    'dl',
    { class: 'facts' },
    h('dt', {}, 'state'),
    h('dd', {}, h('span', { class: stateClass(t.state), 'data-state': t.state }, t.state)),
    h('dt', {}, 'attempt'),
    h('dd', {}, String(t.attempt)),
    t.name !== undefined && h('dt', {}, 'name'),
    t.name !== undefined && h('dd', {}, t.name),
    t.pilot !== undefined && h('dt', {}, 'pilot'),
    t.pilot !== undefined && h('dd', {}, t.pilot),
    t.exitCode !== undefined && h('dt', {}, 'exit code'),
    t.exitCode !== undefined && h('dd', {}, String(t.exitCode)),
    t.endpoint !== undefined && h('dt', {}, 'endpoint'),
    t.endpoint !== undefined && h('dd', {}, t.endpoint),
  );
  const parts: HTMLElement[] = [dl];
  if (t.reason !== undefined) {
    parts.push(
      h(
        'div',
        { class: 'reason', role: 'status' },
        h('strong', {}, t.reason.code),
        ` ${t.reason.message}`,
        h('span', { class: 'muted' }, ` (${t.reason.component})`),
      ),
    );
  }
  if (!t.final && who.may.submit) {
    const button = h('button', { type: 'button', class: 'danger', id: 'cancel' }, 'cancel task');
    button.addEventListener('click', () => {
      button.disabled = true;
      postJson(`${path}/cancel`)
        .then(() => announce(`cancel of ${t.uid} asked`))
        .catch((e: unknown) => {
          button.disabled = false;
          announce(`cannot cancel: ${String(e)}`);
        });
    });
    parts.push(button);
  }
  return h('div', {}, ...parts);
}

function waiting(t: TaskDetail): HTMLElement[] {
  if (t.final || t.explanation === undefined) return [];
  const e = t.explanation as Explanation; // what GET /v1/tasks/{uid} says of a waiting task
  const parts: HTMLElement[] = [];
  if (e.waiting !== undefined) {
    parts.push(
      h(
        'div',
        { class: 'explain', role: 'status' },
        h('strong', {}, `waits (${e.waiting.kind}): `),
        e.waiting.message,
        h('span', { class: 'muted' }, ` — ${e.waiting.component}`),
      ),
    );
  }
  if (t.estimatedStart !== undefined) {
    parts.push(
      h('div', { class: 'eta' }, `expected to start at ${clock(Date.parse(t.estimatedStart))}`),
    );
  } else if (e.noEstimate !== undefined) {
    parts.push(h('div', { class: 'eta muted' }, `no estimated start: ${e.noEstimate}`));
  }
  return parts;
}

function historyTable(entries: readonly HistoryEntry[]): HTMLElement {
  const first = entries.find((e) => e.ts !== undefined)?.ts;
  return h(
    'table',
    { class: 'history' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ...['state', 'attempt', 'time', 'since the first', 'step'].map((c) =>
          h('th', { scope: 'col' }, c),
        ),
      ),
    ),
    h(
      'tbody',
      {},
      ...entries.map((e, i) => {
        const before = entries
          .slice(0, i)
          .reverse()
          .find((x) => x.ts !== undefined)?.ts;
        return h(
          'tr',
          { class: e.inferred ? 'inferred' : '' },
          h('th', { scope: 'row' }, h('span', { class: stateClass(e.state) }, e.state)),
          h('td', {}, String(e.attempt)),
          h('td', {}, e.ts !== undefined ? clock(e.ts) : 'passed (not reported)'),
          h(
            'td',
            {},
            e.ts !== undefined && first !== undefined ? `+${duration(e.ts - first)}` : '',
          ),
          h('td', {}, e.ts !== undefined && before !== undefined ? duration(e.ts - before) : ''),
        );
      }),
    ),
  );
}

function resultOf(t: TaskDetail): HTMLElement[] {
  if (!('result' in t) || t.result === undefined) return [];
  return [h('h3', {}, 'Result'), h('pre', { class: 'result' }, JSON.stringify(t.result, null, 2))];
}

/** One of the task's outputs, followed as it is written until the task ends. */
function output(uid: string, stream: 'stdout' | 'stderr', signal: AbortSignal): HTMLElement {
  const pre = h('pre', {
    class: 'output',
    id: `out-${stream}`,
    tabindex: '0',
    'aria-label': stream,
    'aria-live': 'off',
  });
  const note = h('span', { class: 'muted' }, ' following…');
  let text = '';
  let pending = false;
  const show = (): void => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
      pre.textContent = text;
      if (atEnd) pre.scrollTop = pre.scrollHeight;
    });
  };
  void follow(
    `/v1/tasks/${encodeURIComponent(uid)}/output?stream=${stream}&follow=true`,
    (e) => {
      if (e.event === 'output') {
        text += JSON.parse(e.data) as string;
        if (text.length > KEEP_CHARS) text = text.slice(text.length - KEEP_CHARS);
        show();
      } else if (e.event === 'end') {
        note.textContent = ` (the task ended ${JSON.parse(e.data) as string})`;
      } else if (e.event === 'error') note.textContent = ` (${JSON.parse(e.data) as string})`;
    },
    signal,
    (e) => (note.textContent = ` (${String(e)})`),
  );
  return h('div', { class: 'stream' }, h('h4', {}, stream, note), pre);
}
