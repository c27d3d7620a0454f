/**
 * A task attempt's output cap ('stream' spawns with a cap: SpawnSpec.stream.capBytes, else the
 * helper's --stream-cap-bytes): the first half of what it writes (stdout and stderr together)
 * is framed as it comes; past it, only the last half is held, in memory, and framed when its
 * output ends, after a marker line `[pilotfish: N bytes dropped]` in each stream that lost
 * bytes. pf-spawner.c keeps the same bytes: keep the two in step. Node built-ins only.
 */

/** The marker line put where `dropped` bytes of a stream were; `midLine`: the head ended in one. */
export function dropMarker(dropped: number, midLine: boolean): Buffer {
  return Buffer.from(`${midLine ? '\n' : ''}[pilotfish: ${dropped} bytes dropped]\n`, 'utf8');
}

/** A piece of output: its stream (0 stdout, 1 stderr) and bytes. */
export interface Piece {
  k: number;
  data: Buffer;
}

export class OutputCap {
  private readonly head: number;
  private readonly tail: number;
  /** Bytes framed as they came (at most `head`). */
  private framed = 0;
  /** The last bytes past the head, oldest first, `heldBytes` in all (at most `tail`). */
  private held: Piece[] = [];
  private heldBytes = 0;
  /** Per stream: bytes dropped, and whether its last framed byte ended a line. */
  readonly dropped = [0, 0];
  private readonly lineEnded = [true, true];

  constructor(capBytes: number) {
    this.head = Math.ceil(capBytes / 2);
    this.tail = capBytes - this.head;
  }

  /** Bytes dropped so far, both streams. */
  get droppedBytes(): number {
    return this.dropped[0]! + this.dropped[1]!;
  }

  /** What of `chunk` (stream `k`) is framed now; the rest is held (and maybe drops older bytes). */
  take(k: number, chunk: Buffer): Buffer | undefined {
    const room = this.head - this.framed;
    const now = room > 0 ? chunk.subarray(0, room) : undefined;
    if (now !== undefined) {
      this.framed += now.length;
      if (now.length > 0) this.lineEnded[k] = now[now.length - 1] === 0x0a;
    }
    const rest = chunk.subarray(now?.length ?? 0);
    if (rest.length > 0) this.hold(k, rest);
    return now;
  }

  /** At the output's end: the markers, then the held tail, in order; nothing is held after. */
  release(): Piece[] {
    const out: Piece[] = [];
    for (const k of [0, 1]) {
      const n = this.dropped[k]!;
      if (n > 0) out.push({ k, data: dropMarker(n, !this.lineEnded[k]) });
    }
    out.push(...this.held);
    this.held = [];
    this.heldBytes = 0;
    return out;
  }

  private hold(k: number, data: Buffer): void {
    if (data.length === 0) return;
    // a copy: the chunk's buffer may be reused by its reader
    this.held.push({ k, data: Buffer.from(data) });
    this.heldBytes += data.length;
    while (this.heldBytes > this.tail) {
      const first = this.held[0]!;
      const over = this.heldBytes - this.tail;
      const cut = Math.min(over, first.data.length);
      this.dropped[first.k]! += cut;
      this.heldBytes -= cut;
      if (cut === first.data.length) this.held.shift();
      else first.data = first.data.subarray(cut);
    }
  }
}
