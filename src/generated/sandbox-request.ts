/* Generated from schemas/sandbox-request.schema.json by scripts/gen-types.js: do not edit. */

/**
 * The client's request to an agent on its pilot's file channel: a read-only look into the pilot's sandbox (docs/output.md, output over the session). The agent serves paths inside its own sandbox only and bounds the bytes of each reply.
 */
export interface SandboxRequest {
  /**
   * stat: the size of a regular file; read: bytes of one at `offset`; list: the names in a directory.
   */
  op: 'stat' | 'read' | 'list';
  session: string;
  pilot: string;
  /**
   * Request number, echoed in the reply.
   */
  req: number;
  /**
   * Absolute and normalized, inside the pilot's sandbox.
   */
  path: string;
  /**
   * read: where to start.
   */
  offset?: number;
  /**
   * read: at most this many bytes (the agent may send fewer).
   */
  length?: number;
}
