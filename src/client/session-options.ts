import type { Logger } from '../lib/logger';

/**
 * What `Session.open` takes (checked against schemas/session-options.schema.json, less
 * `logger`). Its own file: the Session facade and the runtime beneath it both read it.
 */
export interface SessionOptions {
  /**
   * State store: 'embedded' (default) keeps an append-only file in the session directory; a
   * MongoDB URI (`mongodb://[user:password@]host[:port][,…]/[database][?options]`, database
   * `pilotfish` by default) keeps the session's notifications in that database, written there
   * by the agents' UpdateWorkers directly (docs/state-store.md says when to choose it and what
   * the agents' nodes must reach). Open fails with a StoreUnreachableError naming the hosts
   * when no server answers within `serverSelectionTimeoutMS` (10 s unless the URI says).
   * A resumed session uses the store it was opened with, unless this names another URI.
   */
  store?: string;
  /** Parent directory of session directories (default: ./.pilotfish in the working dir). */
  dir?: string;
  /** The new session's uid and directory name (default: pf.YYYYMMDD.HHMMSS.xxxxxx, UTC). */
  uid?: string;
  /**
   * Uid of a session in `dir` whose client died: its store and journal are reopened, its
   * addresses bound again (its agents reconnect on their own), its pilots and tasks adopted by
   * managers created in the same order as before, and callbacks already delivered are not
   * delivered again. Callbacks start with `replay()` (or the first wait), once they are set.
   * A session whose client still runs (it answers on its control socket) is refused.
   * A MongoDB session whose directory is not in `dir` (another machine) is resumed from its
   * database, given its URI as `store`: the directory is made again from it.
   */
  resume?: string;
  /** UpdateWorkers of the client side (default 1; agents have their own). */
  updateWorkers?: number;
  /** The lowest level written to client.log in the session directory (default 'info'). */
  logLevel?: 'error' | 'warn' | 'info' | 'debug';
  /**
   * IP address (or interface) the session listens on for its agents (default 127.0.0.1).
   * Batch pilots on other hosts need an address their compute nodes can reach.
   */
  bindHost?: string;
  /**
   * Every port a session listens on is authenticated and encrypted (CurveZMQ; each pilot holds
   * keys of its own). `'trusted-network'` turns that off, for a network where every host and
   * user is trusted: anyone who reaches the ports can then run commands as you.
   */
  insecure?: 'trusted-network';
  /** Also log here (the session always logs to client.log in its directory). */
  logger?: Logger;
}
