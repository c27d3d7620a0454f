import { describe, expect, it } from '@jest/globals';
import { clientErrorResponse } from '../../../src/service/errors';

// What a connection gets when its bytes break HTTP itself: a status Node's parser error
// implies, and the API's error body, never Fastify's own shape.

function parse(raw: string): { status: string; headers: string[]; body: unknown } {
  const [head, body] = raw.split('\r\n\r\n');
  const [status, ...headers] = head!.split('\r\n');
  expect(Buffer.byteLength(body!)).toBe(
    Number(headers.find((h) => h.startsWith('Content-Length: '))!.slice(16)),
  );
  return { status: status!, headers, body: JSON.parse(body!) };
}

describe('clientErrorResponse', () => {
  it.each([
    [
      'ERR_HTTP_REQUEST_TIMEOUT',
      'HTTP/1.1 408 Request Timeout',
      'E_REQUEST_TIMEOUT',
      /within 10 s/,
    ],
    [
      'HPE_HEADER_OVERFLOW',
      'HTTP/1.1 431 Request Header Fields Too Large',
      'E_HEADERS_TOO_LARGE',
      /16 KiB/,
    ],
    ['HPE_INVALID_METHOD', 'HTTP/1.1 400 Bad Request', 'E_BAD_REQUEST', /HTTP\/1\.1 request/],
    [undefined, 'HTTP/1.1 400 Bad Request', 'E_BAD_REQUEST', /HTTP\/1\.1 request/],
  ])('%s: %s with the API error %s', (code, status, errCode, message) => {
    const r = parse(clientErrorResponse(code));
    expect(r.status).toBe(status);
    expect(r.headers).toEqual(
      expect.arrayContaining(['Content-Type: application/json', 'Connection: close']),
    );
    expect(r.body).toEqual({ error: { code: errCode, message: expect.stringMatching(message) } });
  });
});
