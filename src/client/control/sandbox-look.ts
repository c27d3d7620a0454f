import type { SandboxLook } from '../../generated';
import { codeError } from '../../lib/sandbox-files';
import type { ControlRuntime } from './context';
import type { ControlRequestOf } from './protocol';

/**
 * `sandbox`: a look into a pilot's sandbox through its agent's file channel, for `pilotfish
 * tail` and `logs` where their machine does not see the sandbox (docs/output.md). The agent
 * decides what it serves (its sandbox alone); what it refuses is this reply's error, its code
 * the agent's (ENOENT, EACCES, ...), EHOSTUNREACH where the agent is not connected.
 */
export async function sandboxLook(
  rt: ControlRuntime,
  req: ControlRequestOf<'sandbox'>,
): Promise<SandboxLook> {
  const asks = rt.links.files?.sandbox;
  if (asks === undefined) throw codeError('EHOSTUNREACH', 'this session has no file channels');
  const { header, data } = await asks.ask(req.pilot, {
    op: req.look,
    path: req.path,
    ...(req.offset !== undefined ? { offset: req.offset } : {}),
    ...(req.length !== undefined ? { length: req.length } : {}),
  });
  return {
    ...(header.size !== undefined ? { size: header.size } : {}),
    ...(header.names !== undefined ? { names: header.names } : {}),
    ...(req.look === 'read' ? { data: (data ?? Buffer.alloc(0)).toString('base64') } : {}),
  };
}
