import { BodyReader, EMPTY, FramingError, Lines, parseFields, type BodySink } from './http1-body';

// The framing of HTTP/1.1 requests from the router's clients (RFC 9112), fed the bytes of a
// connection as they come, one request after another (pipelined ones wait their turn). Strict,
// as a front that may stand behind another proxy must be: a request it cannot frame for certain
// (both Content-Length and Transfer-Encoding, a folded or malformed header, a bare CR, a target
// with spaces or bytes beyond ASCII) is answered 400 and its connection closed, so no two
// parsers can disagree on where a request ends.

export { FramingError };

/** A request's head, as read. */
export interface RequestHead {
  method: string;
  /** The path and query as sent. */
  target: string;
  /** Header fields: lowercased names and values, in order. */
  headers: string[];
  /** Its connection may carry another request after this one's answer. */
  keepAlive: boolean;
  /** An HTTP/1.0 client: an answer without a length ends with the connection (no chunks). */
  http10: boolean;
  /** The client waits for `100 Continue` before it sends its body. */
  expectContinue: boolean;
  /** Content-Length (undefined for a chunked body). */
  length: number | undefined;
  /** The body, once whole (the server fills it in), and where the request came from. */
  body: Buffer;
  remoteAddress: string;
}

/** The first value of header `name` (lowercase). */
export function headerOf(headers: readonly string[], name: string): string | undefined {
  for (let i = 0; i < headers.length; i += 2) if (headers[i] === name) return headers[i + 1];
  return undefined;
}

export interface RequestSink {
  /** The head is whole; its body follows (or not: a length of 0). */
  head(head: RequestHead): void;
  body: BodySink;
}

/** The most a head may hold (as node:http's default). */
const MAX_HEAD = 16 * 1024;
const HEAD_END = Buffer.from('\r\n\r\n');
const REQUEST_LINE = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+) ([!-~]+) HTTP\/1\.([01])$/;

export class RequestReader {
  private inHead = true;
  private readonly lines = new Lines();
  private readonly bodyReader = new BodyReader();

  constructor(private readonly sink: RequestSink) {}

  /** Between requests: nothing of the next has come (a close now loses nothing). */
  get between(): boolean {
    return this.inHead && !this.lines.started;
  }

  /**
   * Reads `buf` from `i` up to the end of one request at most; the offset it stopped at (what
   * follows is the next request's, read once this one is answered).
   */
  feed(buf: Buffer, i: number): number {
    while (i < buf.length) {
      if (this.inHead) {
        // a client may send an empty line or two between requests (RFC 9112 2.2)
        if (!this.lines.started && buf[i] === 0x0d && buf[i + 1] === 0x0a) {
          i += 2;
          continue;
        }
        i = this.lines.read(buf, i, HEAD_END, MAX_HEAD, (head) => this.onHead(head));
        if (!this.inHead && this.bodyReader.done) return this.ended(i);
      } else {
        i = this.bodyReader.read(buf, i);
        if (this.bodyReader.done) return this.ended(i);
      }
    }
    return i;
  }

  private ended(i: number): number {
    this.inHead = true;
    return i;
  }

  private onHead(text: string): void {
    // empty lines before a request (their CR and LF split over reads) are not its own
    let head = text;
    while (head.startsWith('\r\n')) head = head.slice(2);
    if (head === '') return;
    const lines = head.split('\r\n');
    const m = REQUEST_LINE.exec(lines[0]!);
    if (m === null) {
      throw new FramingError(`not an HTTP/1.x request line: '${lines[0]!.slice(0, 80)}'`);
    }
    const [, method, target, minor] = m as unknown as [string, string, string, string];
    if (!target.startsWith('/') && !(method === 'OPTIONS' && target === '*')) {
      throw new FramingError(`the request target must be a path, not '${target.slice(0, 80)}'`);
    }
    const f = parseFields(lines);
    let hosts = 0;
    let expect: string | undefined;
    for (let k = 0; k < f.headers.length; k += 2) {
      if (f.headers[k] === 'host') hosts++;
      else if (f.headers[k] === 'expect') expect = f.headers[k + 1]!.toLowerCase();
    }
    if (minor === '1' && hosts !== 1) {
      throw new FramingError('an HTTP/1.1 request has exactly one Host header');
    }
    if (expect !== undefined && expect !== '100-continue') {
      throw new FramingError(`Expect '${expect}' cannot be met`, 417);
    }
    this.inHead = false;
    const chunked = f.coding !== undefined;
    this.sink.head({
      method,
      target,
      headers: f.headers,
      keepAlive: minor === '1' ? !f.close : f.keepAlive && !f.close,
      http10: minor === '0',
      expectContinue: expect !== undefined && minor === '1',
      length: chunked ? undefined : (f.length ?? 0),
      body: EMPTY,
      remoteAddress: '',
    });
    // a request without a length or chunks has no body (it is never read to the close)
    this.bodyReader.start(this.sink.body, chunked ? undefined : (f.length ?? 0), chunked);
  }
}
