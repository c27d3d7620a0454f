import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { UsageError } from '../../../src/errors';
import {
  readStoreChoice,
  STORE_FILE,
  storeChoiceOf,
  writeStoreChoice,
} from '../../../src/updater/store-choice';

const URI = 'mongodb://u:secret@h1:27017,h2/app?replicaSet=rs0';

describe('storeChoiceOf', () => {
  it('is embedded for no option and for "embedded"', () => {
    expect(storeChoiceOf(undefined)).toEqual({ kind: 'embedded' });
    expect(storeChoiceOf('embedded')).toEqual({ kind: 'embedded' });
  });

  it('is MongoDB for a mongodb:// or mongodb+srv:// URI, with the database it names', () => {
    expect(storeChoiceOf(URI)).toEqual({ kind: 'mongodb', uri: URI, db: 'app' });
    expect(storeChoiceOf('mongodb+srv://c.example.net')).toEqual({
      kind: 'mongodb',
      uri: 'mongodb+srv://c.example.net',
      db: 'pilotfish',
    });
  });

  it('refuses anything else, saying what is allowed and never quoting credentials', () => {
    expect(() => storeChoiceOf('nonsense')).toThrow(
      new UsageError("store: expected 'embedded' or a mongodb:// URI, got 'nonsense'"),
    );
    const mistyped = (): unknown => storeChoiceOf('mongo://u:secret@h/x');
    expect(mistyped).toThrow(UsageError);
    expect(mistyped).toThrow("got 'mongo://…'");
    expect(mistyped).not.toThrow(/secret/);
    expect(() => storeChoiceOf('mongodb://u:secret@')).toThrow(UsageError);
    expect(() => storeChoiceOf('mongodb://u:secret@')).not.toThrow(/secret/);
  });
});

describe('writeStoreChoice and readStoreChoice', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'pf-store-choice-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const file = (): string => path.join(dir, STORE_FILE);

  it('writes nothing for an embedded session, which reads back as embedded', () => {
    writeStoreChoice(dir, { kind: 'embedded' });
    expect(existsSync(file())).toBe(false);
    expect(readStoreChoice(dir)).toEqual({ kind: 'embedded' });
  });

  it('keeps a MongoDB choice in store.json, mode 0600, and reads it back', () => {
    const choice = storeChoiceOf(URI);
    writeStoreChoice(dir, choice);
    expect(statSync(file()).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file(), 'utf8'))).toEqual({ mongodb: URI, db: 'app' });
    expect(readStoreChoice(dir)).toEqual(choice);
  });

  it('refuses to overwrite store.json unless asked to replace it', () => {
    writeStoreChoice(dir, storeChoiceOf(URI));
    const other = storeChoiceOf('mongodb://u:new@h3/app');
    expect(() => writeStoreChoice(dir, other)).toThrow(expect.objectContaining({ code: 'EEXIST' }));
    expect(readStoreChoice(dir)).toEqual(storeChoiceOf(URI));
    chmodSync(file(), 0o644); // loosened since: replacing it makes it private again
    writeStoreChoice(dir, other, { replace: true });
    expect(readStoreChoice(dir)).toEqual(other);
    expect(statSync(file()).mode & 0o777).toBe(0o600);
  });

  it('calls a damaged store.json a usage error that names it and quotes none of it', () => {
    for (const text of [
      'u:secret',
      '{"mongodb": "mongodb://u:secret@h/x", "db": ',
      'null',
      '[]',
      '{"mongodb": "postgres://u:secret@h/x", "db": "x"}',
      '{"mongodb": "mongodb://u:secret@h/x"}',
      '{"mongodb": 7, "db": "x"}',
    ]) {
      writeFileSync(file(), text);
      let error: unknown;
      try {
        readStoreChoice(dir);
      } catch (e) {
        error = e;
      }
      expect([text, error]).toEqual([text, expect.any(UsageError)]);
      const message = (error as Error).message;
      expect(message).toContain(file());
      expect(message).toContain('expected {"mongodb": "mongodb://…", "db": "…"}');
      expect(message).not.toContain('secret');
    }
  });
});
