/* Generated from schemas/session-options.schema.json by scripts/gen-types.js: do not edit. */

export interface SessionOptionsInput {
  store?: 'embedded';
  dir?: string;
  uid?: string;
  /**
   * Uid of a session (in `dir`) whose client died: reopen its store and journal, bind its addresses again so its agents reconnect, and deliver only the callbacks it had not delivered.
   */
  resume?: string;
  updateWorkers?: number;
  logLevel?: 'error' | 'warn' | 'info' | 'debug';
  /**
   * IP address (or interface) the session listens on for its agents; default 127.0.0.1. Batch pilots on other hosts need one their compute nodes reach.
   */
  bindHost?: string;
  /**
   * Turns off CurveZMQ authentication and encryption of the session's sockets. Only for a network where every host and user is trusted: anyone who can reach the ports can then run commands as the session's owner.
   */
  insecure?: 'trusted-network';
}
