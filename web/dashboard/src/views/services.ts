// Services and models: the session's service tasks with their endpoints, and, where the
// service runs a model router, each model's replicas, queue, requests in flight, loads and swaps.
import type { RouterModelStatus, SessionStatus, TaskState } from '../../../../src/generated';
import { getJson } from '../api';
import { h, number, stateClass } from '../dom';
import { poll, type View } from './view';

interface ServiceTask {
  uid: string;
  name?: string;
  state: TaskState;
  attempt: number;
  pilot?: string;
  endpoint?: string;
  reason?: { code: string; message: string };
}

export function servicesView(): View {
  const stop = new AbortController();
  const services = h('div', {}, h('p', { class: 'muted' }, 'loading…'));
  const models = h('div');
  const element = h(
    'section',
    { class: 'services' },
    h('h2', {}, 'Services'),
    services,
    h('h2', {}, 'Models'),
    models,
  );
  poll(
    2000,
    async (signal) => {
      const [list, st] = await Promise.all([
        getJson<{ services: ServiceTask[] }>('/v1/services', signal),
        getJson<SessionStatus>('/v1/status?pending=0&running=0', signal),
      ]);
      services.replaceChildren(serviceTable(list.services));
      const routed = (st.routers ?? []).flatMap((r) => r.models);
      models.replaceChildren(
        routed.length === 0
          ? h('p', { class: 'muted' }, 'this service runs no model router')
          : modelTable(routed),
      );
    },
    stop.signal,
  );
  return { element, close: () => stop.abort() };
}

function serviceTable(list: readonly ServiceTask[]): HTMLElement {
  if (list.length === 0) return h('p', { class: 'muted' }, 'no service tasks');
  return h(
    'table',
    {},
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ...['task', 'name', 'state', 'attempt', 'pilot', 'endpoint', 'reason'].map((c) =>
          h('th', { scope: 'col' }, c),
        ),
      ),
    ),
    h(
      'tbody',
      {},
      ...list.map((t) =>
        h(
          'tr',
          {},
          h('th', { scope: 'row' }, h('a', { href: `#/task/${encodeURIComponent(t.uid)}` }, t.uid)),
          h('td', {}, t.name ?? ''),
          h('td', {}, h('span', { class: stateClass(t.state) }, t.state)),
          h('td', {}, String(t.attempt)),
          h('td', {}, t.pilot ?? ''),
          h('td', {}, t.endpoint ?? ''),
          h('td', {}, t.reason === undefined ? '' : `${t.reason.code}: ${t.reason.message}`),
        ),
      ),
    ),
  );
}

function modelTable(models: readonly RouterModelStatus[]): HTMLElement {
  const cols = [
    'model',
    'replicas',
    'queued',
    'in flight',
    'served',
    'loads',
    'mean load',
    'swaps',
    'lost',
  ];
  return h(
    'table',
    { class: 'models' },
    h('thead', {}, h('tr', {}, ...cols.map((c) => h('th', { scope: 'col' }, c)))),
    h(
      'tbody',
      {},
      ...models.map((m) =>
        h(
          'tr',
          { 'data-model': m.name },
          h('th', { scope: 'row' }, m.name),
          h(
            'td',
            {},
            m.replicas.length === 0
              ? 'none'
              : h(
                  'ul',
                  { class: 'replicas' },
                  ...m.replicas.map((r) =>
                    h(
                      'li',
                      {},
                      h('a', { href: `#/task/${encodeURIComponent(r.id)}` }, r.id),
                      ` ${r.state}`,
                      r.pilot !== undefined && ` on ${r.pilot}`,
                      r.node !== undefined && `/${r.node}`,
                      r.endpoint !== undefined && ` at ${r.endpoint}`,
                      ` (${number(r.inFlight)} in flight)`,
                    ),
                  ),
                ),
          ),
          h('td', {}, number(m.queued)),
          h('td', {}, number(m.inFlight)),
          h('td', {}, m.served === undefined ? '' : number(m.served)),
          h('td', {}, number(m.loads)),
          h('td', {}, m.meanLoadMs === undefined ? '' : `${(m.meanLoadMs / 1000).toFixed(1)} s`),
          h('td', {}, number(m.swaps)),
          h('td', {}, number(m.lost)),
        ),
      ),
    ),
  );
}
