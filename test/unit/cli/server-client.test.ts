import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { explainDetail } from '../../../src/cli/commands/explain';
import {
  ServerError,
  SseParser,
  exitOfServerError,
  serverOf,
  taskRoute,
} from '../../../src/cli/server-client';
import { UsageError } from '../../../src/errors';

describe('SseParser', () => {
  it('splits a stream into events, wherever the chunks break, leaving comments out', () => {
    const text =
      ': pilotfish\n\nid: 4\nevent: output\ndata: "one\\n"\n\n: keep-alive\n\r\nevent: end\r\ndata: "DONE"\r\n\r\n';
    for (let cut = 0; cut <= text.length; cut++) {
      const p = new SseParser();
      const events = [...p.push(text.slice(0, cut)), ...p.push(text.slice(cut))];
      expect(events).toEqual([
        { id: '4', event: 'output', data: '"one\\n"' },
        { event: 'end', data: '"DONE"' },
      ]);
    }
  });

  it('joins the data lines of one event, and names an event without a type "message"', () => {
    expect(new SseParser().push('data: a\ndata:b\n\n')).toEqual([
      { event: 'message', data: 'a\nb' },
    ]);
  });
});

describe('serverOf', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pf-server-of-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is undefined without --server, and reads the token from --token-file before PILOTFISH_TOKEN', () => {
    expect(serverOf({}, {})).toBeUndefined();
    expect(serverOf({ server: '' }, { PILOTFISH_TOKEN: 'x' })).toBeUndefined();
    const file = path.join(dir, 'token');
    writeFileSync(file, 'pft_file\n');
    expect(
      serverOf({ server: 'http://h:1/', tokenFile: file }, { PILOTFISH_TOKEN: 'pft_env' }),
    ).toEqual({
      base: 'http://h:1',
      token: 'pft_file',
    });
    expect(serverOf({ server: 'https://h/pf/v1/' }, { PILOTFISH_TOKEN: ' pft_env ' })).toEqual({
      base: 'https://h/pf',
      token: 'pft_env',
    });
  });

  it('refuses a URL that is not http(s), a missing token, and files it cannot read', () => {
    const env = { PILOTFISH_TOKEN: 't' };
    expect(() => serverOf({ server: 'ftp://h' }, env)).toThrow(
      /must start with http:\/\/ or https:\/\//,
    );
    expect(() => serverOf({ server: 'not a url' }, env)).toThrow(/is not a URL/);
    expect(() => serverOf({ server: 'http://h' }, {})).toThrow(
      /--token-file FILE .*PILOTFISH_TOKEN set to the token itself/,
    );
    const missing = path.join(dir, 'none');
    expect(() => serverOf({ server: 'http://h', tokenFile: missing }, {})).toThrow(UsageError);
    expect(() => serverOf({ server: 'http://h', ca: missing }, env)).toThrow(/--ca .*none/);
  });
});

describe('errors and routes', () => {
  it('a closing service is not live (4); any other refusal a failure (1)', () => {
    expect(exitOfServerError(new ServerError(503, 'E_CLOSING', 'closing'))).toBe(4);
    expect(exitOfServerError(new ServerError(500, 'E_CLOSING', 'closing'))).toBe(4);
    expect(exitOfServerError(new ServerError(401, 'E_UNAUTHORIZED', 'no'))).toBe(1);
    expect(exitOfServerError(new ServerError(403, 'E_FORBIDDEN', 'no'))).toBe(1);
  });

  it('puts a uid in one path segment', () => {
    expect(taskRoute('a/b c', '/output')).toBe('/v1/tasks/a%2Fb%20c/output');
  });
});

describe('explainDetail', () => {
  it("tells an ended task's state since its last entry, and its reason unless DONE", () => {
    const reason = {
      code: 'E_EXIT_CODE' as const,
      message: 'task exited with code 1',
      component: 'Executor',
    };
    const history = [
      { state: 'NEW', ts: 1 },
      { state: 'FAILED', ts: 9 },
    ];
    expect(
      explainDetail({
        uid: 't',
        name: 'n',
        state: 'FAILED',
        attempt: 2,
        pilot: 'p',
        reason,
        history,
      }),
    ).toEqual({ uid: 't', name: 'n', state: 'FAILED', attempt: 2, pilot: 'p', since: 9, reason });
    expect(explainDetail({ uid: 't', state: 'DONE', attempt: 1, reason, history: [] })).toEqual({
      uid: 't',
      state: 'DONE',
      attempt: 1,
    });
  });
});
