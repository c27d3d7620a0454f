/* Generated from schemas/session-options.schema.json by scripts/gen-types.js: do not edit. */

/**
 * Options of Session.open(). A field not listed here is rejected.
 */
export interface SessionOptionsInput {
  /**
   * The state store: 'embedded' (the default) keeps an append-only file, store.log, in the session directory; a MongoDB URI (mongodb://[user:password@]host[:port][,host...]/[database][?options], or mongodb+srv://) keeps the session's notifications in that database (default pilotfish), where the agents' UpdateWorkers write them directly.
   */
  store?: (
    | 'embedded'
    | {
        [k: string]: unknown;
      }
  ) &
    string;
  /**
   * The directory that holds session directories (each session makes <dir>/<uid>); default .pilotfish in the process's working directory.
   */
  dir?: string;
  /**
   * The new session's id and the name of its directory: 1 to 128 letters, digits, '.', '_' or '-'. Default: generated, pf.YYYYMMDD.HHMMSS.xxxxxx (the UTC time, then 6 random hex digits).
   */
  uid?: string;
  /**
   * Uid of a session (in `dir`) whose client died: reopen its store and journal, bind its addresses again so its agents reconnect, and deliver only the callbacks it had not delivered.
   */
  resume?: string;
  /**
   * UpdateWorkers of the client side, which write notifications into the store (1 to 64); default 1. Agents have their own (agent.updateWorkers of a pilot).
   */
  updateWorkers?: number;
  /**
   * The lowest level the client writes to client.log in the session directory: error, warn, info or debug; default info.
   */
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
