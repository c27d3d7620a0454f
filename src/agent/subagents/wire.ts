import type { SubAgentMessage } from '../../generated';
import { parseSubAgentMessage } from '../../lib/validate';
import { decode, encode } from '../../transport/codec';

/** Who may speak on a pilot's sub-agent link: its session and pilot, and (at the hub) the node. */
export interface SubAgentPeer {
  session: string;
  pilot: string;
  /** The node a message must name: the hub knows its sender by the socket's routing id. */
  node?: string;
}

export type SubAgentRead = { ok: true; msg: SubAgentMessage } | { ok: false; why: string };

/**
 * One frame of a sub-agent link, decoded and checked against schemas/subagent-message.schema.json
 * and against who may send it. A bad one is refused with the JSON path and what was allowed,
 * never thrown: the receiver counts and logs it and carries on.
 */
export function readSubAgentFrame(frame: Buffer, peer: SubAgentPeer): SubAgentRead {
  let value: unknown;
  try {
    value = decode(frame);
  } catch (e) {
    return { ok: false, why: `not msgpack: ${(e as Error).message}` };
  }
  let msg: SubAgentMessage;
  try {
    msg = parseSubAgentMessage(value);
  } catch (e) {
    return { ok: false, why: (e as Error).message };
  }
  if (msg.session !== peer.session) return { ok: false, why: `names session '${msg.session}'` };
  if (msg.pilot !== peer.pilot) return { ok: false, why: `names pilot '${msg.pilot}'` };
  if (peer.node !== undefined && msg.node !== peer.node) {
    return { ok: false, why: `names node '${msg.node}' but comes from '${peer.node}'` };
  }
  return { ok: true, msg };
}

/** Encodes a message of the link (the sender fills in session, pilot and node). */
export function subAgentFrame(msg: SubAgentMessage): Buffer {
  return encode(msg);
}
