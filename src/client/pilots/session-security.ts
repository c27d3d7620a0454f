import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { UsageError } from '../../errors';
import type { Logger } from '../../lib/logger';
import { PRIVATE_FILE } from '../../lib/private-files';
import {
  newKeyPair,
  type ClientSecurity,
  type KeyPair,
  type ServerSecurity,
} from '../../transport/curve';
import { ZapHandler } from '../../transport/zap';
import { errnoOf, StoreUnwritableError } from '../../updater/state-store';

/**
 * The session's keys and who may connect where. Every socket the session binds on TCP is a
 * CurveZMQ server with the session's key pair (kept in `session.key`, 0600, so a resumed session
 * binds with the same key its agents know). Each pilot gets its own key pair, handed to its
 * agent in the bootstrap file; the pilot's own sockets admit that key alone (ZAP domain
 * `<session>/<pilot>`), the shared control socket every key the session issued.
 */
export class SessionSecurity {
  private readonly domains = new Set<string>();

  private constructor(
    private readonly session: string,
    private readonly server: KeyPair,
    private readonly zap: ZapHandler,
    private readonly log: Logger,
  ) {}

  /** Makes the session's key pair, or reads it back for a resumed session. */
  static async open(session: string, dir: string, log: Logger): Promise<SessionSecurity> {
    const file = path.join(dir, 'session.key');
    let server: KeyPair;
    if (existsSync(file)) {
      server = parseKeyFile(file);
    } else {
      server = newKeyPair();
      try {
        writeSessionKey(dir, server);
      } catch (e) {
        // a full disk at open: said like every other file of the session that cannot be written
        throw new StoreUnwritableError(
          { errno: errnoOf(e), path: file, since: Date.now(), held: 0 },
          { cause: e },
        );
      }
    }
    return new SessionSecurity(session, server, await ZapHandler.shared(), log);
  }

  /** A new key pair for a pilot, admitted on its own sockets and the shared ones. */
  issue(pilot: string): KeyPair {
    const keys = newKeyPair();
    this.admit(pilot, keys.publicKey);
    return keys;
  }

  /** Admits a pilot's key again (a resumed session; the journal keeps public keys). */
  admit(pilot: string, publicKey: string): void {
    for (const domain of [this.pilotDomain(pilot), this.session]) {
      this.domains.add(domain);
      this.zap.admit(domain, pilot, publicKey, this.log);
    }
  }

  /**
   * A resumed session: admits the keys of every pilot its journal holds (`journaledKeys`),
   * before any socket is bound. Its agents reconnect as soon as the shared control socket is,
   * and ZeroMQ does not retry a connection the ZAP handler refused: an agent refused in the
   * moment before its PilotManager re-opened its links would never hear this client again (and
   * be lost).
   */
  admitJournaled(keys: Iterable<{ pilot: string; publicKey: string }>): void {
    for (const { pilot, publicKey } of keys) this.admit(pilot, publicKey);
  }

  /** Server options of a socket only `pilot`'s agent may connect to. */
  forPilot(pilot: string): ServerSecurity {
    return { secretKey: this.server.secretKey, domain: this.pilotDomain(pilot) };
  }

  /** Server options of a socket every agent of the session connects to. */
  shared(): ServerSecurity {
    this.domains.add(this.session);
    return { secretKey: this.server.secretKey, domain: this.session };
  }

  /** What an agent holding `keys` needs to connect. */
  client(keys: KeyPair): ClientSecurity {
    return { serverKey: this.server.publicKey, ...keys };
  }

  /** Connections refused so far, on all of the session's sockets. */
  refused(): number {
    let n = 0;
    for (const d of this.domains) n += this.zap.refused(d);
    return n;
  }

  /** Call after every socket that uses these keys is closed. */
  close(): Promise<void> {
    return this.zap.release(this.domains);
  }

  private pilotDomain(pilot: string): string {
    return `${this.session}/${pilot}`;
  }
}

/** The session's key pair from its directory (undefined: an insecure session has none). */
export function readSessionKey(dir: string): KeyPair | undefined {
  const file = path.join(dir, 'session.key');
  return existsSync(file) ? parseKeyFile(file) : undefined;
}

/** Writes the key file of a session whose directory is rebuilt from its database. */
export function writeSessionKey(dir: string, key: KeyPair): void {
  writeFileSync(path.join(dir, 'session.key'), JSON.stringify(key), {
    mode: PRIVATE_FILE,
    flag: 'wx',
  });
}

function parseKeyFile(file: string): KeyPair {
  try {
    const v = JSON.parse(readFileSync(file, 'utf8')) as Partial<KeyPair>;
    if (typeof v.publicKey === 'string' && typeof v.secretKey === 'string') {
      return { publicKey: v.publicKey, secretKey: v.secretKey };
    }
  } catch {
    // reported below
  }
  throw new UsageError(`cannot resume: ${file} is not a session key file`);
}
