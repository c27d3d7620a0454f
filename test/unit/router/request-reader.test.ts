import { describe, expect, it } from '@jest/globals';
import { FramingError, RequestReader, type RequestHead } from '../../../src/router/request-reader';

interface Read {
  head: Omit<RequestHead, 'body' | 'remoteAddress'>;
  body: string;
}

/** The requests `pieces` hold, read as a server reads them: one at a time, the rest kept. */
function read(pieces: Buffer[]): Read[] {
  const got: Read[] = [];
  let cur: Read | undefined;
  const r = new RequestReader({
    head: (h) => {
      const { body: _b, remoteAddress: _r, ...head } = h;
      cur = { head, body: '' };
    },
    body: (chunk, last) => {
      cur!.body += chunk.toString('latin1');
      if (last) got.push(cur!);
    },
  });
  for (const p of pieces) {
    let i = 0;
    while (i < p.length) i = r.feed(p, i);
  }
  return got;
}

/** The same requests whole, split in two at every byte, and a byte at a time. */
function everySplit(text: string): Read[] {
  const whole = Buffer.from(text, 'latin1');
  const first = read([whole]);
  for (let k = 1; k < whole.length; k++) {
    expect(read([whole.subarray(0, k), whole.subarray(k)])).toEqual(first);
  }
  expect(read([...whole].map((b) => Buffer.from([b])))).toEqual(first);
  return first;
}

function refused(text: string): FramingError {
  try {
    read([Buffer.from(text, 'latin1')]);
  } catch (e) {
    if (e instanceof FramingError) return e;
    throw e;
  }
  throw new Error(`read without an error: ${JSON.stringify(text)}`);
}

const POST = (body: string, extra = '') =>
  `POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n${extra}Content-Length: ${body.length}\r\n\r\n${body}`;

describe('RequestReader', () => {
  it('reads pipelined requests one after another, however their bytes are split', () => {
    const got = everySplit(
      `${POST('{"model":"m"}')}\r\nGET /v1/models HTTP/1.1\r\nhost: h\r\nConnection: close\r\n\r\n`,
    );
    expect(got).toEqual([
      {
        head: {
          method: 'POST',
          target: '/v1/chat/completions?x=1',
          headers: ['host', 'h', 'content-type', 'application/json', 'content-length', '13'],
          keepAlive: true,
          http10: false,
          expectContinue: false,
          length: 13,
        },
        body: '{"model":"m"}',
      },
      {
        head: expect.objectContaining({ method: 'GET', target: '/v1/models', keepAlive: false }),
        body: '',
      },
    ]);
  });

  it('decodes a chunked body, and knows an HTTP/1.0 client and Expect: 100-continue', () => {
    const [chunked] = everySplit(
      'POST /a HTTP/1.1\r\nhost: h\r\ntransfer-encoding: chunked\r\nexpect: 100-continue\r\n\r\n3\r\n{"m\r\n5;x=y\r\nodel"\r\n0\r\n\r\n',
    );
    expect([chunked!.body, chunked!.head.length, chunked!.head.expectContinue]).toEqual([
      '{"model"',
      undefined,
      true,
    ]);
    const [old] = read([Buffer.from('GET / HTTP/1.0\r\n\r\n')]);
    expect([old!.head.http10, old!.head.keepAlive]).toEqual([true, false]);
    const [oldKept] = read([Buffer.from('GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n')]);
    expect(oldKept!.head.keepAlive).toBe(true);
  });

  it('refuses what two parsers could read two ways, with the status a client gets', () => {
    const cases: [string, number, RegExp][] = [
      [
        POST('{}', 'Transfer-Encoding: chunked\r\n'),
        400,
        /both Content-Length and Transfer-Encoding/,
      ],
      [
        'POST / HTTP/1.1\r\nhost: h\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n',
        400,
        /not one length/,
      ],
      ['POST / HTTP/1.1\r\nhost: h\r\ncontent-length: +1\r\n\r\n', 400, /not one length/],
      [
        'POST / HTTP/1.1\r\nhost: h\r\ntransfer-encoding: gzip, chunked\r\n\r\n',
        501,
        /not chunked/,
      ],
      ['GET / HTTP/1.1\r\nhost: h\r\nx: a\r\n  folded\r\n\r\n', 400, /malformed/],
      ['GET / HTTP/1.1\r\nhost: h\r\nx : a\r\n\r\n', 400, /malformed/],
      ['GET / HTTP/1.1\r\nhost: h\r\nx: a\rb\r\n\r\n', 400, /control byte/],
      ['GET / HTTP/1.1\nhost: h\r\n\r\n', 400, /request line/],
      ['GET / HTTP/1.1\r\nhost: h\nx: y\r\n\r\n', 400, /control byte/],
      ['GET /a b HTTP/1.1\r\nhost: h\r\n\r\n', 400, /request line/],
      ['GET /\u00e9 HTTP/1.1\r\nhost: h\r\n\r\n', 400, /request line/],
      ['GET http://elsewhere/ HTTP/1.1\r\nhost: h\r\n\r\n', 400, /must be a path/],
      ['GET / HTTP/2.0\r\nhost: h\r\n\r\n', 400, /request line/],
      ['GET / HTTP/1.1\r\n\r\n', 400, /one Host header/],
      ['GET / HTTP/1.1\r\nhost: a\r\nhost: b\r\n\r\n', 400, /one Host header/],
      ['POST / HTTP/1.1\r\nhost: h\r\nexpect: something\r\n\r\n', 417, /cannot be met/],
      ['POST / HTTP/1.1\r\nhost: h\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n', 400, /chunk size/],
      [`GET / HTTP/1.1\r\nhost: h\r\nx: ${'y'.repeat(17_000)}`, 431, /too long/],
    ];
    for (const [text, status, message] of cases) {
      const e = refused(text);
      expect([e.status, e.message]).toEqual([status, expect.stringMatching(message)]);
    }
  });
});
