import { describe, expect, it } from '@jest/globals';
import { UsageError } from '../../../../src/errors';
import { DEFAULT_DB, isMongoUri, parseMongoUri } from '../../../../src/updater/mongodb/uri';

/** The UsageError parseMongoUri throws for `uri` (fails the test where it throws none). */
function refusal(uri: string): UsageError {
  try {
    parseMongoUri(uri);
  } catch (e) {
    expect(e).toBeInstanceOf(UsageError);
    return e as UsageError;
  }
  throw new Error(`parseMongoUri accepted ${uri}`);
}

describe('isMongoUri', () => {
  it('tells a mongodb:// or mongodb+srv:// URI from anything else', () => {
    expect(isMongoUri('mongodb://h')).toBe(true);
    expect(isMongoUri('mongodb+srv://cluster0.example.net')).toBe(true);
    for (const other of [undefined, 'embedded', 'postgres://x', 'xmongodb://h', 'mongodb:/h', '']) {
      expect([other, isMongoUri(other)]).toEqual([other, false]);
    }
  });
});

describe('parseMongoUri', () => {
  it('lists every host of a multi-host URI, with its port where the URI gives one', () => {
    const t = parseMongoUri('mongodb://u:secret@h1:27017,h2:27018,h3/app?replicaSet=rs0');
    expect(t.hosts).toEqual(['h1:27017', 'h2:27018', 'h3']);
    expect(t.db).toBe('app');
  });

  it('names the one service name of an SRV URI as its host', () => {
    const t = parseMongoUri('mongodb+srv://u:secret@cluster0.example.net/prod');
    expect(t).toMatchObject({ hosts: ['cluster0.example.net'], db: 'prod' });
  });

  it('reads the database from the path, %-escapes decoded, else the default', () => {
    expect(parseMongoUri('mongodb://h/my%2Ddb').db).toBe('my-db');
    for (const uri of ['mongodb://h', 'mongodb://h/', 'mongodb://h/?w=1', 'mongodb://h:1?w=1']) {
      expect([uri, parseMongoUri(uri).db]).toEqual([uri, DEFAULT_DB]);
    }
    expect(DEFAULT_DB).toBe('pilotfish');
  });

  it('keeps the URI as given and hides user and password in the redacted form', () => {
    const uri = 'mongodb://alice:s3cr%40t@h1:27017,h2/app?authSource=admin';
    const t = parseMongoUri(uri);
    expect(t.uri).toBe(uri);
    expect(t.redacted).not.toMatch(/alice|s3cr/);
    expect(t.redacted).toContain('h1:27017,h2/app');
    // a user without a password is hidden too (a user name can say too much)
    expect(parseMongoUri('mongodb://alice@h/x').redacted).not.toContain('alice');
    expect(parseMongoUri('mongodb+srv://alice:pw@c.example.net/x').redacted).toMatch(
      /^mongodb\+srv:\/\/[^@]*@c\.example\.net\/x$/,
    );
    expect(parseMongoUri('mongodb://h:27017/x').redacted).toBe('mongodb://h:27017/x');
  });

  it('sees serverSelectionTimeoutMS in the URI whatever its case, and no other option', () => {
    const set = (uri: string): boolean => parseMongoUri(uri).selectionTimeoutSet;
    expect(set('mongodb://h/x?serverSelectionTimeoutMS=500')).toBe(true);
    expect(set('mongodb://h/x?SERVERSELECTIONTIMEOUTMS=500')).toBe(true);
    expect(set('mongodb://h/x?w=1&serverselectiontimeoutms=1')).toBe(true);
    expect(set('mongodb://h/x')).toBe(false);
    expect(set('mongodb://h/x?connectTimeoutMS=500&socketTimeoutMS=500')).toBe(false);
  });

  it('refuses a URI that is not one, saying what one looks like and never the password', () => {
    for (const uri of [
      'mongodb://',
      'mongodb://u:secret@',
      'mongodb://u:secret@/x',
      'mongodb://u:sec:ret@h/x', // an unescaped ':' in the password
      'mongodb://u:sec@ret@h/x', // an unescaped '@'
      'mongodb+srv://u:secret@a.example.net,b.example.net/x',
      'mongodb+srv://u:secret@c.example.net:27017/x',
      'postgres://u:secret@h/x',
    ]) {
      const e = refusal(uri);
      expect([uri, e.message]).toEqual([uri, expect.stringMatching(/^store: /)]);
      expect(e.message).not.toMatch(/secret|sec:ret|ret@h/);
    }
    expect(refusal('mongodb://').message).toContain('expected mongodb://[user:password@]host');
  });

  it('refuses what the driver refuses (ports, options, their values) as a usage error', () => {
    for (const [uri, why] of [
      ['mongodb://u:secret@h:notaport/x', /h:notaport/],
      ['mongodb://u:secret@h:99999/x', /h:99999/],
      ['mongodb://u:secret@h/x?noSuchOption=1', /noSuchOption/i],
      ['mongodb://u:secret@h/x?serverSelectionTimeoutMS=soon', /serverSelectionTimeoutMS/i],
      ['mongodb://u:secret@h/x?tls=maybe', /tls/],
    ] as const) {
      const e = refusal(uri);
      expect([uri, e.message]).toEqual([uri, expect.stringMatching(why)]);
      expect(e.message).not.toContain('secret');
      expect(e.message).toContain('mongodb://_credentials_@h'); // the redacted form
    }
  });

  it('keeps the password out of a driver message that would quote it', () => {
    // an option value the driver quotes back, equal to the password
    const e = refusal('mongodb://u:abc123@h/x?serverSelectionTimeoutMS=abc123');
    expect(e.message).not.toContain('abc123');
    expect(e.message).toContain('***');
  });

  it('refuses a database name MongoDB would refuse, naming it and not the password', () => {
    for (const [path, db] of [
      ['a.b', 'a.b'],
      ['a%2Fb', 'a/b'],
      ['a$b', 'a$b'],
      ['a%20b', 'a b'],
      ['a%22b', 'a"b'],
      ['a%5Cb', 'a\\b'],
      ['d'.repeat(64), 'd'.repeat(64)],
    ]) {
      const e = refusal(`mongodb://u:secret@h/${path}`);
      expect(e.message).toContain(`'${db}' is not a MongoDB database name`);
      expect(e.message).not.toContain('secret');
    }
    expect(parseMongoUri(`mongodb://h/${'d'.repeat(63)}`).db).toHaveLength(63);
    const bad = refusal('mongodb://u:secret@h/%zz');
    expect(bad.message).toContain("'%zz'");
    expect(bad.message).not.toContain('secret');
  });
});
