import { BodyReader, FramingError, Lines, parseFields } from './http1-body';

// The framing of a replica's HTTP/1.1 answers (RFC 9112), fed the bytes of its connection as
// they come: the head, then the body by Content-Length, chunked, or to the connection's end.
// A misframed answer on a reused connection would hand one client's bytes to the next: what
// cannot be framed for certain is an error. Body bytes are views of what was read, not copies.

export { FramingError };

/** Where an answer goes as it is read. */
export interface AnswerSink {
  head(status: number, headers: string[]): void;
  /** Bytes of the body, decoded from chunks; `last`: the answer is whole (the last call). */
  body(chunk: Buffer, last: boolean): void;
}

/** The most a head (status line and headers) may hold. */
const MAX_HEAD = 64 * 1024;
const HEAD_END = Buffer.from('\r\n\r\n');
const STATUS = /^HTTP\/1\.([01]) ([1-5]\d\d)(?: [^\0\r\n]*)?$/;

export class AnswerReader {
  /** An answer is due and its head has not come whole. */
  private inHead = false;
  private sink: AnswerSink | undefined;
  private headRequest = false;
  private readonly lines = new Lines();
  private readonly bodyReader = new BodyReader();
  private readonly onBody = (chunk: Buffer, last: boolean): void => this.sink!.body(chunk, last);
  /** The answer read last lets its connection serve another request. */
  keepAlive = false;
  /** Seconds the replica said it keeps an idle connection open (`Keep-Alive: timeout=N`). */
  idleHintS: number | undefined;

  /** An answer is due (its request was sent); `headRequest`: it has no body. */
  expect(sink: AnswerSink, headRequest: boolean): void {
    this.sink = sink;
    this.headRequest = headRequest;
    this.inHead = true;
    this.lines.reset();
    this.keepAlive = false;
  }

  private get idle(): boolean {
    return !this.inHead && this.bodyReader.done;
  }

  /**
   * Reads `buf`. True when the answer due is complete with it; bytes beyond that are an answer
   * nobody asked for, and the connection may not be reused (`keepAlive` false).
   */
  feed(buf: Buffer): boolean {
    if (this.idle) throw new FramingError('the replica sent bytes when no answer was due');
    let i = 0;
    while (i < buf.length) {
      i = this.inHead
        ? this.lines.read(buf, i, HEAD_END, MAX_HEAD, (head) => this.onHead(head))
        : this.bodyReader.read(buf, i);
      if (this.idle) {
        if (i < buf.length) this.keepAlive = false;
        return true;
      }
    }
    return false;
  }

  /** The replica closed its side: the end of a body sent until the close, else an error. */
  end(): boolean {
    if (this.idle) return false;
    if (this.bodyReader.untilClose) return this.bodyReader.close();
    throw new FramingError(
      this.inHead && !this.lines.started
        ? 'the replica closed the connection before it answered'
        : 'the replica closed the connection in the middle of its answer',
    );
  }

  private onHead(head: string): void {
    const lines = head.split('\r\n');
    const status = STATUS.exec(lines[0]!);
    if (status === null) {
      throw new FramingError(`not an HTTP/1.x status line: '${lines[0]!.slice(0, 80)}'`);
    }
    const code = Number(status[2]);
    const f = parseFields(lines);
    if (f.idleHintS !== undefined) this.idleHintS = f.idleHintS;
    if (code < 200) {
      // an interim answer (100 Continue, 103 Early Hints): the real one follows
      if (code === 101) throw new FramingError('the replica switched protocols (101)');
      return;
    }
    this.inHead = false;
    this.keepAlive = status[1] === '1' && !f.close;
    this.sink!.head(code, f.headers);
    const bodyless = this.headRequest || code === 204 || code === 304;
    if (!bodyless && f.coding === undefined && f.length === undefined) {
      // no length: the body lasts until the replica closes the connection
      this.keepAlive = false;
    }
    this.bodyReader.start(
      this.onBody,
      bodyless ? 0 : f.length,
      !bodyless && f.coding !== undefined,
    );
  }
}
