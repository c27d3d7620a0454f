import { describe, expect, it } from '@jest/globals';
import { AnswerReader, FramingError } from '../../../src/router/answer-reader';

/** What a reader made of `bytes` fed in the pieces given: head, body, whether it ended. */
function read(pieces: Buffer[], opts: { head?: boolean; close?: boolean } = {}) {
  const got = { status: 0, headers: [] as string[], body: '', ends: 0, complete: false };
  const r = new AnswerReader();
  r.expect(
    {
      head: (status, headers) => {
        got.status = status;
        got.headers = headers;
      },
      body: (chunk, last) => {
        got.body += chunk.toString('latin1');
        if (last) got.ends++;
      },
    },
    opts.head === true,
  );
  for (const p of pieces) {
    if (r.feed(p)) got.complete = true;
  }
  if (opts.close === true && r.end()) got.complete = true;
  return { ...got, keepAlive: r.keepAlive, idleHintS: r.idleHintS };
}

/** `text` fed whole, and split in two at every byte, and a byte at a time: all the same. */
function everySplit(text: string, opts: { head?: boolean; close?: boolean } = {}) {
  const whole = Buffer.from(text, 'latin1');
  const first = read([whole], opts);
  for (let k = 1; k < whole.length; k++) {
    expect(read([whole.subarray(0, k), whole.subarray(k)], opts)).toEqual(first);
  }
  const bytes = [...whole].map((b) => Buffer.from([b]));
  expect(read(bytes, opts)).toEqual(first);
  return first;
}

const fails = (text: string, message: RegExp, opts: { close?: boolean } = {}) => {
  expect(() => read([Buffer.from(text, 'latin1')], opts)).toThrow(FramingError);
  expect(() => read([Buffer.from(text, 'latin1')], opts)).toThrow(message);
};

describe('AnswerReader', () => {
  it('reads an answer with a Content-Length, however its bytes are split', () => {
    const got = everySplit(
      'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\nKeep-Alive: timeout=5\r\n\r\n{"a":"bcd"}',
    );
    expect(got).toEqual({
      status: 200,
      headers: [
        'content-type',
        'application/json',
        'content-length',
        '11',
        'keep-alive',
        'timeout=5',
      ],
      body: '{"a":"bcd"}',
      ends: 1,
      complete: true,
      keepAlive: true,
      idleHintS: 5,
    });
  });

  it('decodes a chunked answer with extensions and trailers', () => {
    const got = everySplit(
      'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-type: text/event-stream\r\n\r\n' +
        '6\r\ndata: \r\nA;name=x\r\n1234567890\r\n0\r\nx-trailer: 1\r\n\r\n',
    );
    expect([got.body, got.ends, got.complete, got.keepAlive]).toEqual([
      'data: 1234567890',
      1,
      true,
      true,
    ]);
  });

  it('reads a body without a length until the close, and does not reuse that connection', () => {
    const got = everySplit('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nall of it', {
      close: true,
    });
    expect([got.body, got.ends, got.complete, got.keepAlive]).toEqual([
      'all of it',
      1,
      true,
      false,
    ]);
  });

  it('knows the answers without a body: HEAD, 204, 304, a zero length', () => {
    for (const [text, head] of [
      ['HTTP/1.1 200 OK\r\ncontent-length: 99\r\n\r\n', true],
      ['HTTP/1.1 204 No Content\r\n\r\n', false],
      ['HTTP/1.1 304 Not Modified\r\n\r\n', false],
      ['HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n', false],
    ] as const) {
      const got = everySplit(text, { head });
      expect([got.body, got.ends, got.complete, got.keepAlive]).toEqual(['', 1, true, true]);
    }
  });

  it('skips interim answers (100, 103) before the real one', () => {
    const got = everySplit(
      'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nok',
    );
    expect([got.status, got.body, got.headers]).toEqual([201, 'ok', ['content-length', '2']]);
  });

  it('keeps a connection only when the answer allows it', () => {
    const close = read([
      Buffer.from('HTTP/1.1 200 OK\r\nConnection: close\r\ncontent-length: 0\r\n\r\n'),
    ]);
    expect(close.keepAlive).toBe(false);
    const old = read([Buffer.from('HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n')]);
    expect(old.keepAlive).toBe(false);
    // bytes past the end of the answer: nobody asked for them, the connection goes
    const extra = read([Buffer.from('HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\nxHTTP/1.1')]);
    expect([extra.body, extra.complete, extra.keepAlive]).toEqual(['x', true, false]);
  });

  it('refuses what it cannot frame for certain, with a reason', () => {
    fails('HTTP/1.1 200 OK\r\ncontent-length: 2\r\ntransfer-encoding: chunked\r\n\r\n', /both/);
    fails('HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\n', /not one length/);
    fails('HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n', /not one length/);
    fails('HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n', /not chunked/);
    fails('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n', /chunk size/);
    fails(
      'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nabc\r\n',
      /longer than its size/,
    );
    fails('HTTP/2 200\r\n\r\n', /status line/);
    fails('HTTP/1.1 200 OK\r\nbad header\r\n\r\n', /malformed/);
    fails('HTTP/1.1 200 OK\r\nname : value\r\n\r\n', /malformed/);
    fails('HTTP/1.1 200 OK\r\na: b\r\n folded\r\n\r\n', /malformed/);
    fails('HTTP/1.1 200 OK\r\na: b\rc\r\n\r\n', /control byte/);
    fails('HTTP/1.1 101 Switching Protocols\r\n\r\n', /switched protocols/);
    fails(`HTTP/1.1 200 OK\r\nx: ${'y'.repeat(70_000)}`, /too long/);
    fails('HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nab', /in the middle/, { close: true });
    fails('', /before it answered/, { close: true });
    const idle = new AnswerReader();
    expect(() => idle.feed(Buffer.from('x'))).toThrow(/no answer was due/);
    expect(idle.end()).toBe(false);
  });
});
