import type { Task } from '../../client/task';
import { taskSummary } from '../views';

/** Tasks a page holds by default, and at most. */
const PAGE = 100;
const MAX_PAGE = 1000;

export interface TaskListQuery {
  state?: string;
  name?: string;
  pilot?: string;
  label?: string | string[];
  namePrefix?: string;
  reason?: string;
  limit?: string;
  after?: string;
  offset?: string;
}

/** The query of GET /v1/tasks: strings (the project's Ajv coerces nothing). */
export const TASK_LIST_QUERY = {
  type: 'object',
  additionalProperties: false,
  properties: {
    state: {
      type: 'string',
      pattern: '^[A-Z_]+(,[A-Z_]+)*$',
      description: 'Only tasks in one of these states (comma-separated): DONE,FAILED',
    },
    name: { type: 'string', minLength: 1, description: 'Only tasks of this name' },
    namePrefix: {
      type: 'string',
      minLength: 1,
      description: 'Only tasks whose name starts so (or, without a name, whose uid does)',
    },
    reason: {
      type: 'string',
      pattern: '^[A-Z0-9_]+(,[A-Z0-9_]+)*$',
      description: 'Only tasks whose reason has one of these codes (comma-separated): E_EXIT',
    },
    pilot: { type: 'string', minLength: 1, description: 'Only tasks bound to this pilot' },
    label: {
      anyOf: [
        { type: 'string', pattern: '^[^=]+=.*$' },
        { type: 'array', items: { type: 'string', pattern: '^[^=]+=.*$' }, maxItems: 16 },
      ],
      description: 'Only tasks with this label, key=value (repeat for all of several)',
    },
    limit: {
      type: 'string',
      pattern: '^[1-9][0-9]{0,3}$',
      description: `Tasks a page holds (default ${PAGE}, at most ${MAX_PAGE})`,
    },
    after: {
      type: 'string',
      pattern: '^[0-9]{1,15}$',
      description: 'The page after this cursor: the `next` of the page before',
    },
    offset: {
      type: 'string',
      pattern: '^[0-9]{1,9}$',
      description:
        'Instead of `after`: the page that starts at this place among the matching tasks (0: the first); the answer then says `total` and `events`',
    },
  },
} as const;

/** The position of the session's latest event, for a page that says where its view stands. */
export type EventsAt = () => number;

/**
 * A page of the session's tasks in submission order, filtered; `next` is the cursor of the page
 * after it (absent on the last one). A cursor is a submission number, so pages stay right while
 * tasks are added and change state. With `offset` (a table that scrolls to any place), the page
 * at that place among the matches, with how many match in all and the position of the latest
 * event then (`events`: a view follows GET /v1/events from it).
 */
export function pageOf(
  all: Iterable<Task>,
  q: TaskListQuery,
  eventsAt: EventsAt,
): { tasks: unknown[]; next?: string; total?: number; offset?: number; events?: number } {
  const limit = Math.min(Number(q.limit ?? PAGE), MAX_PAGE);
  const keep = filterOf(q);
  const tasks: unknown[] = [];
  if (q.offset !== undefined) {
    const events = eventsAt();
    const offset = Number(q.offset);
    let total = 0;
    for (const t of all) {
      if (!keep(t)) continue;
      if (total >= offset && tasks.length < limit) tasks.push(taskSummary(t));
      total++;
    }
    return { tasks, total, offset, events };
  }
  const after = q.after === undefined ? -1 : Number(q.after);
  let last: Task | undefined;
  for (const t of all) {
    if (t.seq <= after || !keep(t)) continue;
    if (tasks.length === limit) {
      return { tasks, next: String(last!.seq) };
    }
    tasks.push(taskSummary(t));
    last = t;
  }
  return { tasks };
}

/** Whether a task matches the query's filters (all of them). */
function filterOf(q: TaskListQuery): (t: Task) => boolean {
  const states = q.state === undefined ? undefined : new Set(q.state.split(','));
  const reasons = q.reason === undefined ? undefined : new Set(q.reason.split(','));
  const prefix = q.namePrefix;
  const labels = (q.label === undefined ? [] : [q.label].flat()).map((l) => {
    const i = l.indexOf('=');
    return [l.slice(0, i), l.slice(i + 1)] as const;
  });
  return (t) =>
    (states === undefined || states.has(t.state)) &&
    (q.name === undefined || t.description.name === q.name) &&
    (prefix === undefined || (t.description.name ?? t.uid).startsWith(prefix)) &&
    (reasons === undefined || (t.reason !== undefined && reasons.has(t.reason.code))) &&
    (q.pilot === undefined || t.pilot === q.pilot) &&
    labels.every(([k, v]) => t.description.labels?.[k] === v);
}
