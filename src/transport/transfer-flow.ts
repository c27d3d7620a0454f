/**
 * Pure decisions of the file channel (the `transfer` staging action): which chunk to ask for
 * next, whether the server takes a chunk, when to tell about progress. No I/O and no clock: the
 * shells (client/files/server.ts, agent/file-channel.ts) pass the time in.
 */

/** Bytes per chunk: big enough that a chunk's round trip is not the bottleneck. */
export const CHUNK_BYTES = 2 ** 20;
/** Chunks asked for and not yet answered, per transfer: the memory a transfer holds. */
export const WINDOW_CHUNKS = 4;
/** The largest chunk a request may ask for or carry (the schema says the same). */
export const MAX_CHUNK_BYTES = 4 * 2 ** 20;
/** The file channel's maxMessageSize: one chunk and its header. */
export const MAX_FILE_MESSAGE_BYTES = MAX_CHUNK_BYTES + 64 * 1024;

export interface Chunk {
  offset: number;
  length: number;
}

/**
 * The chunks of a file of `total` bytes, asked for in order with at most `window` outstanding,
 * and answered in order (a transfer's requests are served one after another).
 */
export class ChunkWindow {
  private asked = 0;
  private answered = 0;
  private outstanding = 0;

  constructor(
    readonly total: number,
    private readonly chunkBytes: number = CHUNK_BYTES,
    private readonly window: number = WINDOW_CHUNKS,
  ) {
    if (!(chunkBytes > 0 && chunkBytes <= MAX_CHUNK_BYTES)) {
      throw new RangeError(`chunk of ${chunkBytes} bytes: must be 1..${MAX_CHUNK_BYTES}`);
    }
    if (!(window >= 1)) throw new RangeError(`window of ${window} chunks: must be at least 1`);
  }

  /** The next chunk to ask for, or undefined when the window is full or all was asked. */
  next(): Chunk | undefined {
    if (this.outstanding >= this.window || this.asked >= this.total) return undefined;
    const chunk = {
      offset: this.asked,
      length: Math.min(this.chunkBytes, this.total - this.asked),
    };
    this.asked += chunk.length;
    this.outstanding++;
    return chunk;
  }

  /** The oldest outstanding chunk was answered with `length` bytes; false if out of turn. */
  answer(chunk: Chunk): boolean {
    if (this.outstanding === 0 || chunk.offset !== this.answered) return false;
    this.answered += chunk.length;
    this.outstanding--;
    return true;
  }

  /** Bytes answered so far. */
  get done(): number {
    return this.answered;
  }

  get finished(): boolean {
    return this.answered >= this.total;
  }
}

/**
 * Why the server refuses a chunk of a transfer, or undefined: chunks come in order (so each side
 * hashes while it streams) and a write never goes past the size announced at open.
 */
export function chunkProblem(
  expected: number,
  size: number,
  offset: number,
  length: number,
): string | undefined {
  if (offset !== expected) return `chunk at offset ${offset}, expected ${expected}`;
  if (offset + length > size) return `chunk ends at ${offset + length}, past the size ${size}`;
  return undefined;
}

export interface ProgressOptions {
  /** Fraction of the total between two reports (0.01: at most about 100 reports). */
  minFraction: number;
  /** Milliseconds between two reports. */
  minMs: number;
}

export const PROGRESS_DEFAULTS: ProgressOptions = { minFraction: 0.01, minMs: 250 };

/**
 * When to tell about a transfer's progress: at the start, at the end, and in between only once
 * both another `minFraction` of the bytes are done and `minMs` have passed since the last report,
 * so a fast transfer reports a few times and a slow one at most about 1/minFraction times.
 */
export class ProgressThrottle {
  private lastBytes = -1;
  private lastAt = -Infinity;

  constructor(
    private readonly total: number,
    private readonly opts: ProgressOptions = PROGRESS_DEFAULTS,
  ) {}

  /** Whether `done` bytes at time `now` should be reported (and, if so, records the report). */
  report(done: number, now: number): boolean {
    const first = this.lastBytes < 0;
    const last = done >= this.total && this.lastBytes < this.total;
    const step = Math.max(1, this.total * this.opts.minFraction);
    const due = done - this.lastBytes >= step && now - this.lastAt >= this.opts.minMs;
    if (!(first || last || due)) return false;
    this.lastBytes = done;
    this.lastAt = now;
    return true;
  }
}
