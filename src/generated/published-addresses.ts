/* Generated from schemas/published-addresses.schema.json by scripts/gen-types.js: do not edit. */

/**
 * The `addresses` field of a MongoDB session's document in `sessions` ({_id: <session uid>}), or an embedded session's `addresses.json` in its directory (0600): where a resumed client that could not listen where its agents connect listens now. Its agents read it while they hear no client, and move to a higher epoch than the one they use. No field means epoch 0: the addresses in each agent's bootstrap file.
 */
export interface PublishedAddresses {
  /**
   * One more than the epoch before (0: the bootstrap files'); an agent moves only to a higher one than it uses.
   */
  epoch: number;
  /**
   * The control socket every agent of the session subscribes to.
   */
  controlDown: string;
  /**
   * Each pilot the client bound again, with its own sockets (an array: pilot uids hold dots, which MongoDB field names should not). A pilot not listed keeps its ports.
   */
  pilots: {
    /**
     * The pilot's uid.
     */
    uid: string;
    /**
     * Its queue of tasks (the agent pulls).
     */
    agentInput: string;
    /**
     * Its queue back to the client (the agent pushes).
     */
    managerOutput: string;
    /**
     * Its own control socket (agent_ready, heartbeats, agent_final).
     */
    controlUp: string;
    /**
     * Its file channel.
     */
    files?: string;
    /**
     * Its store socket, where the session's store is embedded (its UpdateWorkers send there); a MongoDB session's agents write to the database.
     */
    store?: string;
  }[];
  /**
   * When the client published them (ms since the Unix epoch), for people reading the document.
   */
  at: number;
}
