/* Generated from schemas/staging-directive.schema.json by scripts/gen-types.js: do not edit. */

/**
 * One file or directory to put in place: source and target are paths with a scheme (client://, pilot://, task://, task://<uid>/) or absolute paths on the compute side.
 */
export interface StagingDirective {
  source: string;
  target: string;
  /**
   * copy, link (a symbolic link), move, or transfer (bytes sent over the session connection, for pilots that do not share a file system with the client).
   */
  action?: 'copy' | 'link' | 'move' | 'transfer';
  /**
   * A missing source is skipped instead of failing the task.
   */
  optional?: boolean;
}
