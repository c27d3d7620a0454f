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
  limit?: string;
  after?: string;
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
  },
} as const;

/**
 * A page of the session's tasks in submission order, filtered; `next` is the cursor of the page
 * after it (absent on the last one). A cursor is a submission number, so pages stay right while
 * tasks are added and change state.
 */
export function pageOf(all: Iterable<Task>, q: TaskListQuery): { tasks: unknown[]; next?: string } {
  const limit = Math.min(Number(q.limit ?? PAGE), MAX_PAGE);
  const after = q.after === undefined ? -1 : Number(q.after);
  const states = q.state === undefined ? undefined : new Set(q.state.split(','));
  const labels = (q.label === undefined ? [] : [q.label].flat()).map((l) => {
    const i = l.indexOf('=');
    return [l.slice(0, i), l.slice(i + 1)] as const;
  });
  const keep = (t: Task): boolean =>
    (states === undefined || states.has(t.state)) &&
    (q.name === undefined || t.description.name === q.name) &&
    (q.pilot === undefined || t.pilot === q.pilot) &&
    labels.every(([k, v]) => t.description.labels?.[k] === v);
  const tasks: unknown[] = [];
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
