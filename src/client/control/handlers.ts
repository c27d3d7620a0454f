import controlReply from '../../../schemas/control-reply.schema.json';
import controlRequest from '../../../schemas/control-request.schema.json';
import pilotState from '../../../schemas/pilot-state.schema.json';
import reason from '../../../schemas/reason.schema.json';
import taskState from '../../../schemas/task-state.schema.json';
import waitReason from '../../../schemas/wait-reason.schema.json';
import { explainTask } from '../tasks/explain';
import type { ControlContext } from './context';
import type { ControlOp, ControlRequestOf, ControlResults } from './protocol';
import { sandboxLook } from './sandbox-look';
import { cancelLive, liveStatus } from './status';

/**
 * One op of the control protocol: the schema of its request, what carries it out, the schema of
 * what it answers. The schemas are `$ref`s into CONTROL_SCHEMAS, so a server that registers
 * those can use them as they are (an HTTP route's body and response schemas).
 */
export interface ControlHandler<Op extends ControlOp> {
  /** The request: its branch of schemas/control-request.schema.json. */
  readonly request: { readonly $ref: string };
  /**
   * Carries out a request already checked against `request`. What it throws is an error reply
   * (dispatch.ts): its `code`, else E_INTERNAL.
   */
  handle(ctx: ControlContext, req: ControlRequestOf<Op>): Promise<ControlResults[Op]>;
  /** What it answers: `definitions/<op>` of schemas/control-reply.schema.json. */
  readonly reply: { readonly $ref: string };
  /** Whether it is refused (E_CLOSING) once the session has begun to close. */
  readonly refusedWhileClosing: boolean;
}

/** The control protocol: a handler for every op of schemas/control-request.schema.json. */
export type ControlTable = { readonly [Op in ControlOp]: ControlHandler<Op> };

/** The `$ref`s of an op's request branch and of its result's definition (checked at load). */
function schemasOf(op: ControlOp): Pick<ControlHandler<ControlOp>, 'request' | 'reply'> {
  const branch = controlRequest.oneOf.findIndex((b) => b.properties.op.const === op);
  if (branch < 0) throw new Error(`control-request.schema.json has no branch for op '${op}'`);
  if (!(op in controlReply.definitions)) {
    throw new Error(`control-reply.schema.json has no definitions/${op}`);
  }
  return {
    request: { $ref: `${controlRequest.$id}#/oneOf/${branch}` },
    reply: { $ref: `${controlReply.$id}#/definitions/${op}` },
  };
}

/**
 * The handler table. To add an op: its branch in schemas/control-request.schema.json, its
 * result in `definitions/<op>` of schemas/control-reply.schema.json (and in the reply's `result`
 * anyOf), `npm run gen:types`, its line in ControlResults (protocol.ts), its entry here (the
 * compiler asks for each), and its case in test/unit/client/control/handlers.test.ts (the test
 * asks for it). docs/architecture.md, "The control socket and the session commands".
 */
export const CONTROL_HANDLERS: ControlTable = {
  status: {
    ...schemasOf('status'),
    handle: (ctx, req) =>
      Promise.resolve(
        liveStatus(ctx.runtime, ctx.managers, ctx.closing() ? 'closing' : 'live', {
          ...(req.pending !== undefined ? { pending: req.pending } : {}),
          ...(req.running !== undefined ? { running: req.running } : {}),
        }),
      ),
    refusedWhileClosing: false,
  },
  explain: {
    ...schemasOf('explain'),
    handle: (ctx, req) => Promise.resolve(explainTask(ctx.runtime, req.uid) ?? null),
    refusedWhileClosing: false,
  },
  cancel: {
    ...schemasOf('cancel'),
    handle: (ctx, req) => cancelLive(ctx.runtime, ctx.managers, req.uids),
    refusedWhileClosing: true,
  },
  sandbox: {
    ...schemasOf('sandbox'),
    handle: (ctx, req) => sandboxLook(ctx.runtime, req),
    refusedWhileClosing: false,
  },
};

/** The ops of the table (what a server routes). */
export const CONTROL_OPS = Object.keys(CONTROL_HANDLERS) as readonly ControlOp[];

/**
 * The schema documents the table's `$ref`s point into, and those they point to in turn (each
 * has its `$id`): what a server registers before it uses `request` and `reply` (Fastify's
 * `addSchema`, Ajv's `addSchema`).
 */
export const CONTROL_SCHEMAS: readonly { readonly $id: string }[] = [
  controlRequest,
  controlReply,
  taskState,
  pilotState,
  reason,
  waitReason,
];
