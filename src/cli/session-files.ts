import { codeError, remoteFiles, type SandboxFiles } from '../lib/sandbox-files';
import { ask } from './control-client';

/**
 * A pilot's sandbox as the live session in `dir` reads it through its agent (the control op
 * `sandbox`), for `pilotfish tail` and `logs` where this machine does not see the sandbox.
 * Rejects EHOSTUNREACH when no client of the session answers (it ended: its agents are gone).
 */
export function sessionFiles(dir: string, pilot: string): SandboxFiles {
  return remoteFiles(async (body) => {
    const reply = await ask(dir, {
      op: 'sandbox',
      pilot,
      look: body.op,
      path: body.path,
      ...(body.offset !== undefined ? { offset: body.offset } : {}),
      ...(body.length !== undefined ? { length: body.length } : {}),
    });
    if (reply === undefined) throw codeError('EHOSTUNREACH', 'the session is not live');
    if (!reply.ok) throw codeError(reply.error.code, reply.error.message);
    const { size, names, data } = reply.result;
    return { size, names, data: data === undefined ? undefined : Buffer.from(data, 'base64') };
  });
}
