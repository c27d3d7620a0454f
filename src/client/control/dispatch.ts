import { coerceError, errorMeta, ValidationError } from '../../errors';
import { parseControlRequest } from '../../lib/validate';
import type { ControlContext } from './context';
import { CONTROL_HANDLERS, type ControlHandler } from './handlers';
import type {
  ControlError,
  ControlOp,
  ControlReply,
  ControlRequestOf,
  ControlResults,
} from './protocol';

/**
 * Answers one control request, whatever transport it came by: checks it against
 * schemas/control-request.schema.json (the project's Ajv, `parseControlRequest`), refuses what
 * the session cannot do while it closes, runs the op's handler and wraps what comes out in the
 * reply envelope (schemas/control-reply.schema.json), `id` echoed. Never rejects: a request that
 * does not match is E_VALIDATION with its issues, a refused one E_CLOSING, a handler that throws
 * its error's `code` (else E_INTERNAL), logged. Reading the request off the wire (a line that
 * is not JSON, one too long) is the transport's.
 */
export async function dispatchControl(ctx: ControlContext, input: unknown): Promise<ControlReply> {
  const id = idOf(input);
  try {
    const result = await run(ctx, parseControlRequest(input));
    return { ...id, ok: true, result };
  } catch (e) {
    const err = coerceError(e);
    const error: ControlError = {
      code: (err as { code?: unknown }).code?.toString() ?? 'E_INTERNAL',
      message: err.message,
      ...(err instanceof ValidationError ? { issues: err.issues } : {}),
    };
    if (!(err instanceof ValidationError)) {
      ctx.runtime.log.warn('control request failed', errorMeta(err));
    }
    return { ...id, ok: false, error };
  }
}

async function run<Op extends ControlOp>(
  ctx: ControlContext,
  req: ControlRequestOf<Op>,
): Promise<ControlResults[Op]> {
  const handler: ControlHandler<Op> = CONTROL_HANDLERS[req.op];
  if (handler.refusedWhileClosing && ctx.closing()) throw new ClosingError();
  return handler.handle(ctx, req);
}

class ClosingError extends Error {
  readonly code = 'E_CLOSING';
  constructor() {
    super('the session is closing: its tasks are being canceled already');
  }
}

function idOf(input: unknown): { id?: number | string } {
  const id = (input as { id?: unknown } | null)?.id;
  return typeof id === 'number' || typeof id === 'string' ? { id } : {};
}
