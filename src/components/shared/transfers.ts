/**
 * The seam between the stagers and the `transfer` staging action: bytes sent over the
 * session's own connection, for pilots that share no file system with the client. The agent's
 * stagers call it; the session serves the client's side.
 */
export interface Transfers {
  /**
   * Copies the client's file `clientPath` (absolute, on the client's machine) to `localPath`
   * (on this node): memory bounded, checksum verified, written in place only when complete.
   * Rejects with an Error whose `code` is an errno name (ENOENT, EACCES, ...) or E_TRANSFER,
   * and whose message names the file.
   */
  fetch(task: string, clientPath: string, localPath: string): Promise<TransferResult>;
  /** Copies `localPath` (on this node) to the client's `clientPath`; as fetch, the other way. */
  send(task: string, localPath: string, clientPath: string): Promise<TransferResult>;
}

export interface TransferResult {
  bytes: number;
  /** Hex SHA-256 of the bytes, as both sides computed it. */
  sha256: string;
}
