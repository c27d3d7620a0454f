import type { FastifyInstance } from 'fastify';
import taskDescription from '../../../schemas/task-description.schema.json';
import type { TaskDescription } from '../../generated';
import { dispatchControl } from '../../client/control/dispatch';
import type { Task } from '../../client/task';
import { ValidationError } from '../../errors';
import { sendError } from '../errors';
import type { ServiceContext } from '../context';
import { UID_PARAMS } from './params';
import { taskDetail, taskSummary } from '../views';
import { pageOf, TASK_LIST_QUERY, type TaskListQuery } from './task-list';

/** The most tasks one submit takes (a larger batch: several requests). */
export const MAX_BATCH = 10_000;

const submitBody = {
  type: 'object',
  additionalProperties: false,
  required: ['tasks'],
  properties: {
    tasks: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_BATCH,
      items: { $ref: taskDescription.$id },
      description: `The tasks to submit, at most ${MAX_BATCH}. A task with a uid the session has already is not submitted again: the reply names it (idempotent), unless its description differs (409).`,
    },
  },
} as const;

/** Tasks: submit, list, get, cancel, explain (docs/service.md, "Tasks"). */
export function taskRoutes(app: FastifyInstance, ctx: ServiceContext): void {
  app.post<{ Body: { tasks: TaskDescription[] } }>(
    '/v1/tasks',
    {
      schema: { summary: 'Submit tasks (one or a batch)', tags: ['tasks'], body: submitBody },
      config: { auth: { scope: 'submit' } },
    },
    async (req, reply) => {
      const { fresh, known, conflicts } = partition(ctx, req.body.tasks);
      if (conflicts.length > 0) {
        return sendError(
          reply,
          409,
          'E_UID_TAKEN',
          `a task of another description has uid ${conflicts.map((c) => `'${c.uid}'`).join(', ')}`,
          conflicts.map((c) => ({
            path: `/tasks/${c.index}/uid`,
            message: 'is the uid of a task with another description',
            in: 'body',
          })),
        );
      }
      let made: Task[] = [];
      try {
        made = fresh.length === 0 ? [] : await ctx.tmgr.submitTasks(fresh.map((f) => f.desc));
      } catch (e) {
        if (e instanceof ValidationError) {
          throw reindexed(
            e,
            fresh.map((f) => f.index),
          );
        }
        throw e;
      }
      const byIndex = new Map<number, Task>();
      fresh.forEach((f, i) => byIndex.set(f.index, made[i]!));
      for (const k of known) byIndex.set(k.index, k.task);
      const tasks = req.body.tasks.map((_, i) => taskSummary(byIndex.get(i)!));
      return reply.code(fresh.length > 0 ? 201 : 200).send({ tasks });
    },
  );

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
    (req, reply) => reply.send(pageOf(ctx.session, req.query)),
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
      const detail = taskDetail(t);
      if (t.final) return detail;
      const explained = await dispatchControl(ctx.control, { op: 'explain', uid: t.uid });
      return explained.ok ? { ...detail, explanation: explained.result } : detail;
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

interface Fresh {
  index: number;
  desc: TaskDescription;
}

/** The submitted tasks new to the session, those it has (same description), those it has not. */
function partition(
  ctx: ServiceContext,
  descs: readonly TaskDescription[],
): {
  fresh: Fresh[];
  known: { index: number; task: Task }[];
  conflicts: { index: number; uid: string }[];
} {
  const fresh: Fresh[] = [];
  const known: { index: number; task: Task }[] = [];
  const conflicts: { index: number; uid: string }[] = [];
  descs.forEach((desc, index) => {
    const task = desc.uid === undefined ? undefined : ctx.taskOf(desc.uid);
    if (task === undefined) fresh.push({ index, desc });
    else if (sameJson(task.description, desc)) known.push({ index, task });
    else conflicts.push({ index, uid: desc.uid! });
  });
  return { fresh, known, conflicts };
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** submitTasks's issues name their place in what it was given: in the body, `/tasks/<i>`. */
function reindexed(e: ValidationError, indexes: readonly number[]): ValidationError {
  const issues = e.issues.map((i) => {
    const m = /^\/(\d+)(.*)$/.exec(i.path);
    return m === null ? i : { ...i, path: `/tasks/${indexes[Number(m[1])] ?? m[1]}${m[2]}` };
  });
  return new ValidationError(e.message, issues);
}
