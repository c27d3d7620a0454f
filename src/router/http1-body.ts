// What the router's two HTTP/1.1 readers (answers from replicas, requests from clients) share
// (RFC 9112): finding a head or a line across reads, the header fields, and a body framed by
// Content-Length, by chunks or by the connection's close. Strict: what cannot be framed for
// certain is a FramingError, and the connection it came on is not used again.

/** Bytes that are not a well-framed HTTP/1.1 message; `status`: the answer a client gets. */
export class FramingError extends Error {
  constructor(
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

export const EMPTY = Buffer.alloc(0);
const LINE_END = Buffer.from('\r\n');
/** The most a chunk's size line or a trailer line may hold. */
const MAX_LINE = 4 * 1024;
/** A header name (RFC 9110 5.1: a token). */
export const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const BAD_VALUE = /[\0\r\n]/;
const CHUNK = /^([0-9A-Fa-f]{1,12})[ \t]*(?:;.*)?$/;

/** Finds a delimiter across reads: what came before it, once whole, goes to `take`. */
export class Lines {
  private pending: Buffer | undefined;

  get started(): boolean {
    return this.pending !== undefined;
  }

  reset(): void {
    this.pending = undefined;
  }

  /** The offset after the delimiter, or the end of `buf` while it has not come. */
  read(buf: Buffer, i: number, delim: Buffer, max: number, take: (text: string) => void): number {
    if (this.pending === undefined) {
      const at = buf.indexOf(delim, i);
      if (at >= 0) {
        take(buf.toString('latin1', i, at));
        return at + delim.length;
      }
      if (buf.length - i > max) throw new FramingError('a head or line is too long', 431);
      this.pending = Buffer.from(buf.subarray(i));
      return buf.length;
    }
    // rare: what began in an earlier read
    const held = this.pending.length;
    const joined = Buffer.concat([this.pending, buf.subarray(i)]);
    const at = joined.indexOf(delim, Math.max(0, held - delim.length + 1));
    if (at < 0) {
      if (joined.length > max) throw new FramingError('a head or line is too long', 431);
      this.pending = joined;
      return buf.length;
    }
    this.pending = undefined;
    take(joined.toString('latin1', 0, at));
    return i + (at + delim.length - held);
  }
}

/** A head's header fields, names lowercased, and what framing and reuse need of them. */
export interface Fields {
  headers: string[];
  length: number | undefined;
  coding: string | undefined;
  /** Connection: close was asked for; keep-alive was. */
  close: boolean;
  keepAlive: boolean;
  /** Keep-Alive: timeout=N (seconds). */
  idleHintS: number | undefined;
}

export function parseFields(lines: string[]): Fields {
  const f: Fields = {
    headers: [],
    length: undefined,
    coding: undefined,
    close: false,
    keepAlive: false,
    idleHintS: undefined,
  };
  for (let k = 1; k < lines.length; k++) {
    const line = lines[k]!;
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon) : '';
    if (!TOKEN.test(name)) {
      throw new FramingError(`a header line is malformed: '${line.slice(0, 80)}'`);
    }
    const value = line.slice(colon + 1).trim();
    if (BAD_VALUE.test(value)) throw new FramingError(`header ${name} holds a control byte`);
    const lower = name.toLowerCase();
    if (lower === 'content-length') {
      if (!/^\d{1,15}$/.test(value) || (f.length !== undefined && f.length !== Number(value))) {
        throw new FramingError(`Content-Length '${value}' is not one length`);
      }
      f.length = Number(value);
    } else if (lower === 'transfer-encoding') {
      const v = value.toLowerCase();
      f.coding = f.coding === undefined ? v : `${f.coding}, ${v}`;
    } else if (lower === 'connection') {
      if (/(?:^|,)\s*close\s*(?:,|$)/i.test(value)) f.close = true;
      if (/(?:^|,)\s*keep-alive\s*(?:,|$)/i.test(value)) f.keepAlive = true;
    } else if (lower === 'keep-alive') {
      const t = /(?:^|[,\s])timeout=(\d+)/i.exec(value);
      if (t !== null) f.idleHintS = Number(t[1]);
    }
    f.headers.push(lower, value);
  }
  if (f.coding !== undefined) {
    if (f.length !== undefined) {
      throw new FramingError('the message has both Content-Length and Transfer-Encoding');
    }
    if (f.coding !== 'chunked') {
      throw new FramingError(`Transfer-Encoding '${f.coding}' is not chunked`, 501);
    }
  }
  return f;
}

/** Where a body's bytes go; `last`: the message is whole (the last call). */
export type BodySink = (chunk: Buffer, last: boolean) => void;

const enum B {
  Done,
  Length,
  ChunkSize,
  ChunkData,
  ChunkEnd,
  Trailers,
  UntilClose,
}

/** A body as it comes, by its length, its chunks, or until the close. */
export class BodyReader {
  private s = B.Done;
  private remaining = 0;
  private trailerBytes = 0;
  private readonly lines = new Lines();
  private sink: BodySink = () => undefined;

  get done(): boolean {
    return this.s === B.Done;
  }

  get untilClose(): boolean {
    return this.s === B.UntilClose;
  }

  /** A body of `length` bytes (0: none, ended at once), else chunked, else until the close. */
  start(sink: BodySink, length: number | undefined, chunked: boolean): void {
    this.sink = sink;
    this.lines.reset();
    if (chunked) this.s = B.ChunkSize;
    else if (length === undefined) this.s = B.UntilClose;
    else if (length === 0) {
      this.s = B.Done;
      sink(EMPTY, true);
    } else {
      this.remaining = length;
      this.s = B.Length;
    }
  }

  /** The connection closed: the end of a body sent until then; false if one was cut. */
  close(): boolean {
    if (this.s !== B.UntilClose) return this.s === B.Done;
    this.s = B.Done;
    this.sink(EMPTY, true);
    return true;
  }

  /** Reads body bytes of `buf` from `i`; the offset it stopped at (the body's end, or all). */
  read(buf: Buffer, i: number): number {
    while (i < buf.length && this.s !== B.Done) i = this.step(buf, i);
    return i;
  }

  private step(buf: Buffer, i: number): number {
    switch (this.s) {
      case B.Length:
      case B.ChunkData: {
        const n = Math.min(this.remaining, buf.length - i);
        this.remaining -= n;
        const last = this.remaining === 0 && this.s === B.Length;
        if (this.remaining === 0) this.s = last ? B.Done : B.ChunkEnd;
        this.sink(n === buf.length ? buf : buf.subarray(i, i + n), last);
        return i + n;
      }
      case B.UntilClose:
        this.sink(i === 0 ? buf : buf.subarray(i), false);
        return buf.length;
      case B.ChunkSize:
        return this.lines.read(buf, i, LINE_END, MAX_LINE, (line) => this.onChunkSize(line));
      case B.ChunkEnd:
        return this.lines.read(buf, i, LINE_END, MAX_LINE, (line) => {
          if (line.length > 0) throw new FramingError('a chunk is longer than its size');
          this.s = B.ChunkSize;
        });
      case B.Trailers:
        return this.lines.read(buf, i, LINE_END, MAX_LINE, (line) => {
          this.trailerBytes += line.length + 2;
          if (this.trailerBytes > 64 * 1024) throw new FramingError('the trailers are too long');
          // trailers are not passed on: the message ends at the empty line
          if (line.length === 0) {
            this.s = B.Done;
            this.sink(EMPTY, true);
          }
        });
      case B.Done:
        return buf.length;
    }
  }

  private onChunkSize(line: string): void {
    const m = CHUNK.exec(line);
    if (m === null) {
      throw new FramingError(`a chunk size line is malformed: '${line.slice(0, 80)}'`);
    }
    this.remaining = parseInt(m[1]!, 16);
    if (this.remaining > 0) this.s = B.ChunkData;
    else {
      this.trailerBytes = 0;
      this.s = B.Trailers;
    }
  }
}
