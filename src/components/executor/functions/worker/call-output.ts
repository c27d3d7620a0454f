/**
 * What one function call prints while it runs, kept by its worker and sent with its result
 * (protocol.ts, WireOutput): each stream's bytes in the order written, under a cap on both
 * together that keeps what OutputCap keeps of a task (process/helper/output-cap.ts, whose
 * bytes these must match): the first half of the cap as it comes; past it only the last half,
 * after a line `[pilotfish: N bytes dropped]` in each stream that lost bytes (on a line of its
 * own: a newline first when the head ended in a line). The Python worker keeps the same bytes.
 */
import type { WireOutput } from './protocol';

/** The marker line put where `dropped` bytes of a stream were; `midLine`: the head ended in one. */
function dropMarker(dropped: number, midLine: boolean): Buffer {
  return Buffer.from(`${midLine ? '\n' : ''}[pilotfish: ${dropped} bytes dropped]\n`, 'utf8');
}

/** 0 stdout, 1 stderr. */
export type StreamIndex = 0 | 1;

export class CallOutput {
  private readonly head: number;
  private readonly tail: number;
  /** Bytes kept as they came (at most `head`), per stream in order. */
  private framed = 0;
  private readonly heads: [Buffer[], Buffer[]] = [[], []];
  /** The last bytes past the head, oldest first, `heldBytes` in all (at most `tail`). */
  private held: { k: StreamIndex; data: Buffer }[] = [];
  private heldBytes = 0;
  private readonly dropped = [0, 0];
  private readonly lineEnded = [true, true];

  constructor(capBytes: number) {
    this.head = Math.ceil(capBytes / 2);
    this.tail = capBytes - this.head;
  }

  /** Bytes written to stream `k` (kept: the caller must not change them later). */
  write(k: StreamIndex, data: Buffer): void {
    if (data.length === 0) return;
    const room = this.head - this.framed;
    let rest = data;
    if (room > 0) {
      const now = data.length <= room ? data : data.subarray(0, room);
      this.framed += now.length;
      this.heads[k].push(now);
      this.lineEnded[k] = now[now.length - 1] === 0x0a;
      rest = data.subarray(now.length);
    }
    if (rest.length > 0) this.hold(k, rest);
  }

  /** What the call printed, as its result carries it: a stream that got nothing is left out. */
  result(): WireOutput {
    const out: WireOutput = {};
    for (const k of [0, 1] as const) {
      const parts = this.heads[k];
      if (this.dropped[k]! > 0) parts.push(dropMarker(this.dropped[k]!, !this.lineEnded[k]));
      for (const h of this.held) if (h.k === k) parts.push(h.data);
      if (parts.length === 0) continue;
      const bytes = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
      if (k === 0) out.stdout = bytes;
      else out.stderr = bytes;
    }
    const dropped = this.dropped[0]! + this.dropped[1]!;
    if (dropped > 0) out.dropped = dropped;
    return out;
  }

  private hold(k: StreamIndex, data: Buffer): void {
    this.held.push({ k, data });
    this.heldBytes += data.length;
    while (this.heldBytes > this.tail) {
      const first = this.held[0]!;
      const cut = Math.min(this.heldBytes - this.tail, first.data.length);
      this.dropped[first.k]! += cut;
      this.heldBytes -= cut;
      if (cut === first.data.length) this.held.shift();
      else first.data = first.data.subarray(cut);
    }
  }
}

/** A chunk as a stream's write() gets it: bytes of its own (a Uint8Array is copied). */
export function chunkBytes(chunk: unknown, encoding: unknown): Buffer {
  if (typeof chunk === 'string') {
    return Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
  }
  if (chunk instanceof Uint8Array) return Buffer.from(chunk);
  return Buffer.from(String(chunk), 'utf8');
}
