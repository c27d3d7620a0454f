// Tasks: a filter form (state, name, label, pilot, reason) over the virtual table. The filter
// is the view's address (#/tasks?state=FAILED&reason=E_EXIT), so it can be linked and kept.
import { h } from '../dom';
import { phaseOf, TASK_STATES } from '../model';
import { TaskTable } from '../task-table';
import type { View } from './view';

const FIELDS = [
  ['namePrefix', 'name starts with', 'sim-'],
  ['label', 'label', 'key=value'],
  ['pilot', 'pilot', 'pilot.0000'],
  ['reason', 'reason code', 'E_EXIT'],
] as const;

export function tasksView(params: URLSearchParams): View {
  const query = new URLSearchParams();
  for (const k of ['state', 'namePrefix', 'label', 'pilot', 'reason']) {
    const v = params.get(k);
    if (v !== null && v !== '') query.set(k, v);
  }
  const table = new TaskTable(query.toString());
  const form = filterForm(params);
  const element = h('section', { class: 'tasks' }, h('h2', {}, 'Tasks'), form, table.element);
  void table.start();
  return { element, close: () => table.close() };
}

function filterForm(params: URLSearchParams): HTMLFormElement {
  const state = h('select', { id: 'f-state', name: 'state' }, h('option', { value: '' }, 'any'));
  const phases = ['pending', 'running', 'finishing'] as const;
  for (const p of phases) {
    const states = TASK_STATES.filter((x) => phaseOf(x) === p).join(',');
    state.append(h('option', { value: states }, p));
  }
  for (const x of TASK_STATES) state.append(h('option', { value: x }, x));
  state.value = params.get('state') ?? '';
  if (state.value !== (params.get('state') ?? '')) {
    // a list of states from a link that is none of the options: shown as it is
    const v = params.get('state')!;
    state.append(h('option', { value: v }, v));
    state.value = v;
  }
  const form = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'filter tasks' },
    h('label', { for: 'f-state' }, 'state', state),
    ...FIELDS.map(([name, label, hint]) => {
      const input = h('input', {
        id: `f-${name}`,
        name,
        placeholder: hint,
        value: params.get(name) ?? '',
      });
      return h('label', { for: `f-${name}` }, label, input);
    }),
    h('button', { type: 'submit' }, 'filter'),
    h('button', { type: 'reset' }, 'clear'),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const q = new URLSearchParams();
    for (const [k, v] of new FormData(form)) {
      if (typeof v === 'string' && v.trim() !== '') q.set(k, v.trim());
    }
    location.hash = `#/tasks${q.size > 0 ? `?${q.toString()}` : ''}`;
  });
  form.addEventListener('reset', () => (location.hash = '#/tasks'));
  return form;
}
