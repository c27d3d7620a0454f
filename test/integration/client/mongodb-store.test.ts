import { describe, expect, it } from '@jest/globals';
import { readdirSync } from 'node:fs';
import * as path from 'node:path';
import { Session } from '../../../src/client/session';
import { UsageError, ValidationError } from '../../../src/errors';
import { DEFAULT_SELECTION_TIMEOUT_MS } from '../../../src/updater/mongodb/uri';
import { StoreUnreachableError } from '../../../src/updater/state-store';
import { filesHolding, recordingLogger } from '../../support/secrets';
import { tempDirs } from '../../support/temp-dirs';

// A session whose MongoDB store no server answers, without a server: nothing listens on
// 127.0.0.1:1, so the driver's connection is refused and server selection runs out.

/** The URIs' password: no message may show it, no file hold it (session.key says "secretKey"). */
const PASSWORD = 'secret-7Qz';

/** What `open` rejects with, and how long it took. */
async function failure(open: Promise<Session>): Promise<{ error: unknown; ms: number }> {
  const t0 = Date.now();
  try {
    const s = await open;
    await s.close();
  } catch (error) {
    return { error, ms: Date.now() - t0 };
  }
  throw new Error('Session.open succeeded without a MongoDB server');
}

/** Every message and stack along an error's cause chain. */
function chainText(e: unknown): string {
  const out: string[] = [];
  for (let c = e; c instanceof Error; c = c.cause) out.push(c.message, c.stack ?? '');
  return out.join('\n');
}

describe('Session.open with a MongoDB store no server answers', () => {
  const temp = tempDirs('pf-mongo-open-');

  it('fails within the default selection timeout, naming the host and the reason, leaving nothing', async () => {
    const dir = temp.make();
    const { error, ms } = await failure(
      Session.open({ store: 'mongodb://127.0.0.1:1/x', dir, uid: 'pf-unreachable' }),
    );
    expect(error).toBeInstanceOf(StoreUnreachableError);
    const e = error as StoreUnreachableError;
    expect(e.code).toBe('E_STORE_UNREACHABLE');
    expect(e.hosts).toEqual(['127.0.0.1:1']);
    expect(e.reason).toContain('ECONNREFUSED');
    expect(e.message).toMatch(/^cannot reach MongoDB at 127\.0\.0\.1:1: .*ECONNREFUSED/);
    // the driver's own default is 30 s: this one waited the session's 10 s
    expect(DEFAULT_SELECTION_TIMEOUT_MS).toBe(10_000);
    expect(ms).toBeGreaterThan(DEFAULT_SELECTION_TIMEOUT_MS - 1_000);
    expect(ms).toBeLessThan(DEFAULT_SELECTION_TIMEOUT_MS + 3_000);
    expect(readdirSync(dir)).toEqual([]);
  }, 20_000);

  it('waits what the URI says and never shows its password', async () => {
    const dir = temp.make();
    const log = recordingLogger();
    const { error, ms } = await failure(
      Session.open({
        store: `mongodb://u:${PASSWORD}@127.0.0.1:1/x?serverSelectionTimeoutMS=500`,
        dir,
        logger: log,
      }),
    );
    expect(error).toBeInstanceOf(StoreUnreachableError);
    expect(ms).toBeLessThan(3_000);
    const e = error as StoreUnreachableError;
    expect(e.message).toContain('127.0.0.1:1');
    expect(e.message).toContain('ECONNREFUSED');
    expect(chainText(e)).not.toContain('secret');
    expect(JSON.stringify(e)).not.toContain('secret');
    expect(log.lines.join('\n')).not.toContain('secret');
    expect(readdirSync(dir)).toEqual([]);
    expect(filesHolding(dir, PASSWORD)).toEqual([]);
  });

  it('calls a malformed MongoDB URI a usage error, and any other store a validation error', async () => {
    const dir = temp.make();
    const bad = await failure(Session.open({ store: 'mongodb://', dir }));
    expect(bad.error).toBeInstanceOf(UsageError);
    expect((bad.error as Error).message).toContain('not a MongoDB URI');
    const badPort = await failure(
      Session.open({ store: `mongodb://u:${PASSWORD}@h:notaport/x`, dir }),
    );
    expect(badPort.error).toBeInstanceOf(UsageError);
    expect((badPort.error as Error).message).not.toContain('secret');
    const other = await failure(Session.open({ store: 'postgres://x', dir }));
    expect(other.error).toBeInstanceOf(ValidationError);
    expect((other.error as ValidationError).issues.map((i) => i.path)).toContain('/store');
    expect((other.error as Error).message).toContain('/store');
    expect(readdirSync(dir)).toEqual([]);
  });

  it('resumes a session without its directory only from a MongoDB store, reached first', async () => {
    const dir = temp.make();
    const none = await failure(Session.open({ dir, resume: 'pf-gone' }));
    expect(none.error).toBeInstanceOf(UsageError);
    expect((none.error as Error).message).toBe(
      `cannot resume: no session directory '${path.join(dir, 'pf-gone')}' (a MongoDB session can be resumed without it: give its store's URI)`,
    );
    const embedded = await failure(Session.open({ dir, resume: 'pf-gone', store: 'embedded' }));
    expect((embedded.error as Error).message).toContain('give its store');
    // the database is asked for the session's journal: none answers, so nothing is made
    const log = recordingLogger();
    const { error, ms } = await failure(
      Session.open({
        dir,
        resume: 'pf-gone',
        store: `mongodb://u:${PASSWORD}@127.0.0.1:1/x?serverSelectionTimeoutMS=500`,
        logger: log,
      }),
    );
    expect(error).toBeInstanceOf(StoreUnreachableError);
    expect((error as Error).message).toMatch(/^cannot reach MongoDB at 127\.0\.0\.1:1: /);
    expect(ms).toBeLessThan(3_000);
    expect(chainText(error)).not.toContain('secret');
    expect(log.lines.join('\n')).not.toContain('secret');
    expect(readdirSync(dir)).toEqual([]);
  });

  it('will not resume an embedded session with a MongoDB store', async () => {
    const dir = temp.make();
    const first = await Session.open({ dir });
    await first.close();
    const before = readdirSync(first.dir).sort();
    const { error, ms } = await failure(
      Session.open({ dir, resume: first.uid, store: `mongodb://u:${PASSWORD}@127.0.0.1:1/x` }),
    );
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toBe(
      `cannot resume: session ${first.uid} keeps its store in its directory (embedded), not in MongoDB`,
    );
    expect(ms).toBeLessThan(DEFAULT_SELECTION_TIMEOUT_MS); // refused before reaching for a server
    expect(readdirSync(first.dir).sort()).toEqual(before);
    expect(filesHolding(path.dirname(first.dir), PASSWORD)).toEqual([]);
  });
});
