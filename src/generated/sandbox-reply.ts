/* Generated from schemas/sandbox-reply.schema.json by scripts/gen-types.js: do not edit. */

/**
 * An agent's reply to a SandboxRequest; a read carries its bytes in a second frame.
 */
export interface SandboxReply {
  req: number;
  ok: boolean;
  session: string;
  pilot: string;
  /**
   * stat, read: the file's size now.
   */
  size?: number;
  /**
   * list: the directory's entries.
   *
   * @maxItems 10000
   */
  names?: string[];
  error?: {
    /**
     * An errno name (ENOENT, EACCES, ...) or E_TRANSFER.
     */
    code: string;
    message: string;
  };
}
