/** The client's sockets an agent connects to (its config's `addresses`; an embedded store's too). */
export interface AgentAddresses {
  controlDown: string;
  controlUp: string;
  agentInput: string;
  managerOutput: string;
  files?: string | undefined;
  /** An embedded session's store socket (a MongoDB session's agents write to the database). */
  store?: string | undefined;
}

/** What RelocationCore may ask for; each is fire-and-forget. */
export interface RelocationEffects {
  /**
   * Reads the addresses the session's client published last (MongoDB); the answer comes back
   * as `onRead` (undefined: none published) or `onReadFailed`.
   */
  read(): void;
  /**
   * Moves every connection whose address differs from `from` to `to` (the same keys), for the
   * addresses of `epoch`.
   */
  move(from: AgentAddresses, to: AgentAddresses, epoch: number): void;
}
