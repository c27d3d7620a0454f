/* Generated from schemas/file-reply.schema.json by scripts/gen-types.js: do not edit. */

/**
 * The client's reply to a FileRequest; a chunk read carries its bytes in a second frame.
 */
export interface FileReply {
  req: number;
  ok: boolean;
  /**
   * open_read: the file's size.
   */
  size?: number;
  /**
   * open_read: the file's permission bits.
   */
  mode?: number;
  /**
   * end_read, commit: bytes transferred.
   */
  bytes?: number;
  /**
   * end_read, commit: SHA-256 of the bytes, as the client computed it.
   */
  sha256?: string;
  error?: {
    /**
     * An errno name (ENOENT, EACCES, ...) or E_TRANSFER.
     */
    code: string;
    message: string;
  };
}
