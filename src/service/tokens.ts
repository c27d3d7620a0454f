import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { UsageError } from '../errors';
import { PRIVATE_FILE } from '../lib/private-files';

// The bearer tokens of a jobs service (docs/service.md, "Tokens"): kept in `<serve dir>/
// tokens.json` (0600) as SHA-256 hashes with their scopes, never in clear; a token itself is
// shown once, when it is made. The first start makes an admin token into `admin.token` (0600),
// for the owner to hand on or to use.

/** What a token may do: read (GET), submit (tasks and pilots, cancel), admin (tokens, all). */
export type Scope = 'read' | 'submit' | 'admin';
export const SCOPES: readonly Scope[] = ['read', 'submit', 'admin'];

/** One token, as the file keeps it. */
export interface TokenEntry {
  /** Names the token for `pilotfish serve token revoke`: the first 8 hex digits of its hash. */
  id: string;
  /** SHA-256 of the token, hex. */
  sha256: string;
  scopes: Scope[];
  /** A note of the one who made it (who it is for). */
  label?: string;
  /** Requests a minute this token may make, where the service's default is not for it. */
  ratePerMinute?: number;
  created: string;
}

/** Who presented a valid token: what the routes and the rate limit know of them. */
export interface Caller {
  id: string;
  scopes: readonly Scope[];
  label?: string;
  ratePerMinute?: number;
}

export const TOKENS_FILE = 'tokens.json';
export const ADMIN_TOKEN_FILE = 'admin.token';
/** Tokens start so, to be told apart from other secrets in a file or a log. */
const PREFIX = 'pft_';

function hashOf(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Whether a scope list lets its holder do what `needed` asks (admin may do all, submit reads). */
export function allows(scopes: readonly Scope[], needed: Scope): boolean {
  if (scopes.includes('admin')) return true;
  if (needed === 'read') return scopes.includes('read') || scopes.includes('submit');
  return scopes.includes(needed);
}

export class TokenStore {
  private entries: TokenEntry[];
  private readonly byHash = new Map<string, TokenEntry>();

  private constructor(
    private readonly file: string,
    entries: TokenEntry[],
  ) {
    this.entries = entries;
    for (const e of entries) this.byHash.set(e.sha256, e);
  }

  /**
   * The tokens of the service in `dir`; the first time, one admin token, written to
   * `admin.token` (0600). `made` then holds it.
   */
  static open(dir: string): { store: TokenStore; made?: string } {
    const file = path.join(dir, TOKENS_FILE);
    if (!existsSync(file)) {
      const store = new TokenStore(file, []);
      const made = store.add(['admin'], 'made at the first start');
      writeFileSync(path.join(dir, ADMIN_TOKEN_FILE), `${made}\n`, { mode: PRIVATE_FILE });
      return { store, made };
    }
    let entries: TokenEntry[];
    try {
      entries = (JSON.parse(readFileSync(file, 'utf8')) as { tokens: TokenEntry[] }).tokens;
      if (!Array.isArray(entries)) throw new Error('no "tokens" list');
    } catch (e) {
      throw new UsageError(`cannot read the service's tokens ${file}: ${(e as Error).message}`);
    }
    return { store: new TokenStore(file, entries) };
  }

  /** Who holds a presented token, or undefined when it is none of ours. */
  callerOf(token: string): Caller | undefined {
    const hash = hashOf(token);
    const e = this.byHash.get(hash);
    // the map finds it by its hash; the compare in constant time keeps the check honest
    if (e === undefined) return undefined;
    if (!timingSafeEqual(Buffer.from(e.sha256, 'hex'), Buffer.from(hash, 'hex'))) return undefined;
    return e;
  }

  /**
   * Makes a token with `scopes` (and, if given, its own requests a minute); returns it (shown
   * once: only its hash is kept).
   */
  add(scopes: readonly Scope[], label?: string, ratePerMinute?: number): string {
    if (ratePerMinute !== undefined && !(Number.isInteger(ratePerMinute) && ratePerMinute > 0)) {
      throw new UsageError(`a token's rate is a whole number of requests a minute above 0`);
    }
    const bad = scopes.filter((s) => !SCOPES.includes(s));
    if (scopes.length === 0 || bad.length > 0) {
      throw new UsageError(
        `a token's scopes are among ${SCOPES.join(', ')}${bad.length > 0 ? ` (not ${bad.join(', ')})` : ''}`,
      );
    }
    const token = PREFIX + randomBytes(24).toString('base64url');
    const sha256 = hashOf(token);
    const entry: TokenEntry = {
      id: sha256.slice(0, 8),
      sha256,
      scopes: [...scopes],
      ...(label !== undefined ? { label } : {}),
      ...(ratePerMinute !== undefined ? { ratePerMinute } : {}),
      created: new Date().toISOString(),
    };
    this.entries.push(entry);
    this.byHash.set(sha256, entry);
    this.save();
    return token;
  }

  /** Revokes the token `id` names; false when there is none. */
  revoke(id: string): boolean {
    const e = this.entries.find((t) => t.id === id);
    if (e === undefined) return false;
    this.entries = this.entries.filter((t) => t !== e);
    this.byHash.delete(e.sha256);
    this.save();
    return true;
  }

  list(): readonly TokenEntry[] {
    return this.entries;
  }

  /** Written whole, then renamed over: a crash never leaves half a file. */
  private save(): void {
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, `${JSON.stringify({ tokens: this.entries }, null, 2)}\n`, {
      mode: PRIVATE_FILE,
    });
    renameSync(tmp, this.file);
  }
}
