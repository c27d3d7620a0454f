import type { FastifyInstance } from 'fastify';
import taskDescription from '../../../schemas/task-description.schema.json';
import type { TaskDescription } from '../../generated';
import type { Task } from '../../client/task';
import { ValidationError, type ValidationIssue } from '../../errors';
import { sendError, type ApiError } from '../errors';
import type { ServiceContext } from '../context';
import { confineStaging, stagesOnClient } from '../staging';
import { taskSummary } from '../views';

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

/** POST /v1/tasks: one task or a batch, all taken or none (docs/service.md, "Submit"). */
export function submitRoute(app: FastifyInstance, ctx: ServiceContext): void {
  app.post<{ Body: { tasks: TaskDescription[] } }>(
    '/v1/tasks',
    {
      schema: { summary: 'Submit tasks (one or a batch)', tags: ['tasks'], body: submitBody },
      config: { auth: { scope: 'submit' } },
    },
    async (req, reply) => {
      const prepared = prepare(ctx, req.body.tasks);
      if ('issues' in prepared) throw new ValidationError(prepared.message, prepared.issues);
      const { fresh, known, conflicts } = partition(ctx, prepared.descs);
      if (conflicts.length > 0) {
        return sendError(
          reply,
          409,
          'E_UID_TAKEN',
          `a task of another description has uid ${conflicts.map((c) => `'${c.uid}'`).join(', ')}`,
          conflicts.map((c): NonNullable<ApiError['issues']>[number] => ({
            path: `/tasks/${c.index}/uid`,
            message: c.deleted
              ? 'is the uid of a deleted task'
              : 'is the uid of a task with another description',
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
}

/**
 * The descriptions as the session takes them: a task that stages on the service's host gets
 * its uid now (its artifacts' directory is named by it) and its client-side paths confined to
 * the service's directories (staging.ts).
 */
function prepare(
  ctx: ServiceContext,
  descs: readonly TaskDescription[],
): { descs: TaskDescription[] } | { message: string; issues: ValidationIssue[] } {
  if (!descs.some(stagesOnClient)) return { descs: [...descs] };
  const uids = new Set(descs.flatMap((d) => (d.uid === undefined ? [] : [d.uid])));
  const issues: ValidationIssue[] = [];
  const out = descs.map((d, i) => {
    if (!stagesOnClient(d)) return d;
    const uid = d.uid ?? ctx.freshUid((u) => uids.has(u));
    uids.add(uid);
    const r = confineStaging({ ...d, uid }, uid, ctx.files);
    if ('description' in r) return r.description;
    issues.push(...r.issues.map((x) => ({ ...x, path: `/tasks/${i}${x.path}` })));
    return d;
  });
  if (issues.length === 0) return { descs: out };
  const text = issues.slice(0, 5).map((x) => `${x.path} ${x.message}`);
  return { message: `invalid staging: ${text.join('; ')}`, issues };
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
  conflicts: { index: number; uid: string; deleted: boolean }[];
} {
  const fresh: Fresh[] = [];
  const known: { index: number; task: Task }[] = [];
  const conflicts: { index: number; uid: string; deleted: boolean }[] = [];
  descs.forEach((desc, index) => {
    if (desc.uid !== undefined && ctx.deleted.has(desc.uid)) {
      conflicts.push({ index, uid: desc.uid, deleted: true });
      return;
    }
    const task = desc.uid === undefined ? undefined : ctx.taskOf(desc.uid);
    if (task === undefined) fresh.push({ index, desc });
    else if (sameJson(task.description, desc)) known.push({ index, task });
    else conflicts.push({ index, uid: desc.uid!, deleted: false });
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
