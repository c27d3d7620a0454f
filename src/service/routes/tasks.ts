import type { FastifyInstance } from 'fastify';
import type { Explanation } from '../../generated';
import type { Task, TaskHistoryEntry } from '../../client/task';
import { dispatchControl } from '../../client/control/dispatch';
import { sendError } from '../errors';
import type { ServiceContext } from '../context';
import { UID_PARAMS } from './params';
import { taskDetail, withStoredTimes } from '../views';
import { submitRoute } from './submit';
import { waitRoute } from './wait';
import { resultFileRoute } from './result-file';
import { LIVE_TASKS, pageOf, pagedTwice, TASK_LIST_QUERY, type TaskListQuery } from './task-list';

/** Tasks: submit, list, get (with why it waits), result, cancel (docs/service.md, "Tasks"). */
export function taskRoutes(app: FastifyInstance, ctx: ServiceContext): void {
  submitRoute(app, ctx);
  waitRoute(app, ctx);
  resultFileRoute(app, ctx);

  app.get<{ Querystring: TaskListQuery }>(
    '/v1/tasks',
    {
      schema: {
        summary: 'List tasks, filtered, a page at a time',
        tags: ['tasks'],
        querystring: TASK_LIST_QUERY,
      },
      config: { auth: { scope: 'read' } },
    },
    (req, reply) => {
      const twice = pagedTwice(req.query);
      if (twice !== undefined) {
        return sendError(reply, 400, 'E_VALIDATION', twice.message, [
          { path: twice.path, message: 'must not be given with after', in: 'querystring' },
        ]);
      }
      return reply.send(pageOf(ctx.tasks(), req.query, () => ctx.events.latest(), LIVE_TASKS));
    },
  );

  app.get<{ Params: { uid: string } }>(
    '/v1/tasks/:uid',
    {
      schema: {
        summary: 'One task: state, history, reason, and why it waits',
        tags: ['tasks'],
        params: UID_PARAMS,
      },
      config: { auth: { scope: 'read' } },
    },
    async (req, reply) => {
      const t = ctx.taskOf(req.params.uid);
      if (t === undefined) {
        return sendError(reply, 404, 'E_NOT_FOUND', `no task '${req.params.uid}' in this session`);
      }
      const detail = { ...taskDetail(t), history: await historyOf(ctx, t) };
      if (t.final) return detail;
      const explained = await dispatchControl(ctx.control, { op: 'explain', uid: t.uid });
      if (!explained.ok || explained.result === null) return detail;
      const e = explained.result as Explanation; // the explain op's result
      return {
        ...detail,
        explanation: e,
        ...(e.estimatedStart !== undefined
          ? { estimatedStart: new Date(e.estimatedStart).toISOString() }
          : {}),
      };
    },
  );

  app.get<{ Params: { uid: string } }>(
    '/v1/tasks/:uid/result',
    {
      schema: { summary: "A function call's result", tags: ['tasks'], params: UID_PARAMS },
      config: { auth: { scope: 'read' } },
    },
    (req, reply) => {
      const t = ctx.taskOf(req.params.uid);
      if (t === undefined) {
        return sendError(reply, 404, 'E_NOT_FOUND', `no task '${req.params.uid}' in this session`);
      }
      if (t.state !== 'DONE') {
        const why = t.final ? `it ended ${t.state}` : `it is ${t.state}`;
        return sendError(reply, 409, 'E_NOT_DONE', `task '${t.uid}' has no result: ${why}`);
      }
      return reply.send({ uid: t.uid, result: t.result ?? null });
    },
  );

  app.post<{ Params: { uid: string } }>(
    '/v1/tasks/:uid/cancel',
    {
      schema: { summary: 'Cancel a task', tags: ['tasks'], params: UID_PARAMS },
      config: { auth: { scope: 'submit' } },
    },
    async (req, reply) => {
      const r = await dispatchControl(ctx.control, { op: 'cancel', uids: [req.params.uid] });
      if (!r.ok) {
        return sendError(
          reply,
          r.error.code === 'E_CLOSING' ? 503 : 500,
          r.error.code,
          r.error.message,
        );
      }
      const res = r.result as { canceled: string[]; unknown: string[]; final: string[] };
      if (res.unknown.length > 0) {
        return sendError(reply, 404, 'E_NOT_FOUND', `no task '${req.params.uid}' in this session`);
      }
      return {
        uid: req.params.uid,
        canceled: res.canceled.length > 0,
        alreadyFinal: res.final.length > 0,
      };
    },
  );
}

/** The task's history, with the times its store holds of states the tracker inferred. */
async function historyOf(ctx: ServiceContext, t: Task): Promise<TaskHistoryEntry[]> {
  const history = t.history;
  if (history.every((e) => e.ts !== undefined)) return history;
  try {
    return withStoredTimes(history, await ctx.storedHistory(t.uid));
  } catch {
    return history; // a store that cannot be read now: what the tracker has
  }
}
