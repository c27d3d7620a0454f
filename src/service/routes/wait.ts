import type { FastifyInstance } from 'fastify';
import type { Task } from '../../client/task';
import type { ServiceContext } from '../context';
import { sendError } from '../errors';
import { FinalWatch } from '../final-watch';
import { taskSummary } from '../views';

/** The most tasks one wait names, and the longest it holds the request. */
const MAX_UIDS = 10_000;
const MAX_WAIT_S = 30;
const DEFAULT_WAIT_S = 20;

const waitBody = {
  type: 'object',
  additionalProperties: false,
  required: ['uids'],
  properties: {
    uids: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_UIDS,
      items: { type: 'string', minLength: 1, maxLength: 1024 },
      description: `The tasks to wait for, at most ${MAX_UIDS}`,
    },
    any: {
      type: 'boolean',
      description:
        'true: answer once at least one of them is final, with all that are by then (default: once all are)',
    },
    timeoutS: {
      type: 'number',
      minimum: 0,
      maximum: MAX_WAIT_S,
      description: `Answer after this long whatever the tasks' states (default ${DEFAULT_WAIT_S}, at most ${MAX_WAIT_S}; 0: at once)`,
    },
  },
} as const;

interface WaitBody {
  uids: string[];
  any?: boolean;
  timeoutS?: number;
}

/** A final task as a wait answers it: its summary and, for a call that is DONE, its result. */
function ended(t: Task): Record<string, unknown> {
  return {
    ...taskSummary(t),
    ...(t.state === 'DONE' && t.result !== undefined ? { result: t.result } : {}),
  };
}

/**
 * POST /v1/tasks/wait: a long poll for the end of many tasks (docs/service.md, "Waiting"). It
 * answers `{tasks, pending}`: the named tasks that are final (with their results) and the uids
 * of those that are not, once all are final (or one is, with `any`), or when `timeoutS` is up.
 * A client that follows thousands of calls asks again with what is pending: one request per
 * batch of ends, not one per task.
 */
export function waitRoute(app: FastifyInstance, ctx: ServiceContext): void {
  const watch = new FinalWatch((fn) => ctx.tmgr.onState((t) => fn(t)));
  app.addHook('onClose', (_app, done) => {
    watch.close();
    done();
  });
  app.post<{ Body: WaitBody }>(
    '/v1/tasks/wait',
    {
      schema: {
        summary: 'Wait for tasks to end (a long poll): the final ones with their results',
        tags: ['tasks'],
        body: waitBody,
      },
      config: { auth: { scope: 'read' } },
    },
    async (req, reply) => {
      const uids = [...new Set(req.body.uids)];
      const tasks: Task[] = [];
      const unknown: number[] = [];
      uids.forEach((u, i) => {
        const t = ctx.taskOf(u);
        if (t === undefined) unknown.push(i);
        else tasks.push(t);
      });
      if (unknown.length > 0) {
        const names = unknown.slice(0, 5).map((i) => `'${uids[i]}'`);
        return sendError(
          reply,
          404,
          'E_NOT_FOUND',
          `no task ${names.join(', ')}${unknown.length > 5 ? ` (and ${unknown.length - 5} more)` : ''} in this session`,
          unknown.map((i) => ({
            path: `/uids/${req.body.uids.indexOf(uids[i]!)}`,
            message: 'is not a task of this session',
            in: 'body',
          })),
        );
      }
      const answer = () => ({
        tasks: tasks.filter((t) => t.final).map(ended),
        pending: tasks.filter((t) => !t.final).map((t) => t.uid),
      });
      const open = tasks.filter((t) => !t.final);
      const waitS = req.body.timeoutS ?? DEFAULT_WAIT_S;
      if (open.length === 0 || (req.body.any === true && open.length < tasks.length)) {
        return answer();
      }
      if (waitS === 0) return answer();
      await new Promise<void>((resolve) => {
        let left = open.length;
        const done = (): void => {
          clearTimeout(timer);
          stop();
          reply.raw.off('close', done);
          resolve();
        };
        const timer = setTimeout(done, waitS * 1000);
        const stop = watch.watch(open, (now) => {
          left -= now.length;
          if (left === 0 || req.body.any === true) done();
        });
        // a client that went away holds nothing
        reply.raw.once('close', done);
      });
      return answer();
    },
  );
}
