/* Generated from schemas/staging-directive.schema.json by scripts/gen-types.js: do not edit. */

/**
 * One file or directory to put in place: source and target are paths with a scheme (client://, pilot://, task://, task://<uid>/) or absolute paths on the compute side.
 */
export interface StagingDirective {
  /**
   * What to stage, a file or a directory: client://rel/path (relative to the working directory the session was opened in), client:///abs/path, pilot://rel/path (the pilot's sandbox), task://rel/path (this task's sandbox; task:// alone is the sandbox), task://<uid>/rel/path (the sandbox of task <uid> of the session, once it ran), or /abs/path on the compute side.
   */
  source: string;
  /**
   * Where it goes, in the same forms as source. A target that ends in '/' or names an existing directory receives the source inside it, under the source's name; missing parent directories are made.
   */
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
