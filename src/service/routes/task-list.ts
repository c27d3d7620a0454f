import type { Labels } from '../../generated';
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

/** What a list reads of a task: a live session's Task, or a task as its store tells it. */
export interface ListedTask<T> {
  /** Its submission number: pages by `after` are cut by it. */
  seq(t: T): number;
  uid(t: T): string;
  state(t: T): string;
  name(t: T): string | undefined;
  pilot(t: T): string | undefined;
  reasonCode(t: T): string | undefined;
  labels(t: T): Labels | undefined;
  /** What the page holds of it (TaskSummary). */
  summary(t: T): unknown;
}

/** A live session's tasks, as the TaskManagers hold them. */
export const LIVE_TASKS: ListedTask<Task> = {
  seq: (t) => t.seq,
  uid: (t) => t.uid,
  state: (t) => t.state,
  name: (t) => t.description.name,
  pilot: (t) => t.pilot,
  reasonCode: (t) => t.reason?.code,
  labels: (t) => t.description.labels,
  summary: taskSummary,
};

/** A page as GET /v1/tasks answers it (TaskPage). */
export interface Page {
  tasks: unknown[];
  next?: string;
  total?: number;
  offset?: number;
  events?: number;
}

/**
 * A page of the session's tasks in submission order, filtered; `next` is the cursor of the page
 * after it (absent on the last one). A cursor is a submission number, so pages stay right while
 * tasks are added and change state. With `offset` (a table that scrolls to any place), the page
 * at that place among the matches, with how many match in all and the position of the latest
 * event then (`events`: a view follows GET /v1/events from it).
 */
export function pageOf<T>(
  all: Iterable<T>,
  q: TaskListQuery,
  eventsAt: EventsAt,
  as: ListedTask<T>,
): Page {
  const limit = Math.min(Number(q.limit ?? PAGE), MAX_PAGE);
  const keep = filterOf(q, as);
  const tasks: unknown[] = [];
  if (q.offset !== undefined) {
    const events = eventsAt();
    const offset = Number(q.offset);
    let total = 0;
    for (const t of all) {
      if (!keep(t)) continue;
      if (total >= offset && tasks.length < limit) tasks.push(as.summary(t));
      total++;
    }
    return { tasks, total, offset, events };
  }
  const after = q.after === undefined ? -1 : Number(q.after);
  let last: T | undefined;
  for (const t of all) {
    if (as.seq(t) <= after || !keep(t)) continue;
    if (tasks.length === limit) {
      return { tasks, next: String(as.seq(last!)) };
    }
    tasks.push(as.summary(t));
    last = t;
  }
  return { tasks };
}

/** Whether a task matches the query's filters (all of them). */
function filterOf<T>(q: TaskListQuery, as: ListedTask<T>): (t: T) => boolean {
  const states = q.state === undefined ? undefined : new Set(q.state.split(','));
  const reasons = q.reason === undefined ? undefined : new Set(q.reason.split(','));
  const prefix = q.namePrefix;
  const labels = (q.label === undefined ? [] : [q.label].flat()).map((l) => {
    const i = l.indexOf('=');
    return [l.slice(0, i), l.slice(i + 1)] as const;
  });
  return (t) => {
    if (states !== undefined && !states.has(as.state(t))) return false;
    if (q.name !== undefined && as.name(t) !== q.name) return false;
    if (prefix !== undefined && !(as.name(t) ?? as.uid(t)).startsWith(prefix)) return false;
    if (reasons !== undefined) {
      const code = as.reasonCode(t);
      if (code === undefined || !reasons.has(code)) return false;
    }
    if (q.pilot !== undefined && as.pilot(t) !== q.pilot) return false;
    if (labels.length === 0) return true;
    const own = as.labels(t);
    return labels.every(([k, v]) => own?.[k] === v);
  };
}

/** The 400 of a list asked by both `after` and `offset`, or undefined. */
export function pagedTwice(q: TaskListQuery): { message: string; path: string } | undefined {
  if (q.after === undefined || q.offset === undefined) return undefined;
  return {
    message:
      'invalid request: querystring/offset must not be given with after (a page is found by one or the other)',
    path: '/offset',
  };
}
