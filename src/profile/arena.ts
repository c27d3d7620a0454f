/**
 * Typed arrays carved from one ArrayBuffer. V8 collects garbage whenever buffers' memory grows
 * by some tens of MiB, and with a million-task profile on the heap each collection takes
 * seconds: one allocation for the whole sweep costs one collection at most.
 */
export class Arena {
  private readonly buffer: ArrayBuffer;
  private offset = 0;

  /** `bytes`: the sum of the arrays' sizes; each is aligned to 8 bytes. */
  constructor(bytes: number) {
    this.buffer = new ArrayBuffer(bytes);
  }

  /** The bytes that arrays of these element sizes and lengths take in an arena. */
  static size(...arrays: [bytesPerElement: number, length: number][]): number {
    return arrays.reduce((s, [b, n]) => s + Math.ceil((b * n) / 8) * 8, 0);
  }

  private take(bytes: number): number {
    const at = this.offset;
    this.offset += Math.ceil(bytes / 8) * 8;
    if (this.offset > this.buffer.byteLength) throw new RangeError('arena exhausted');
    return at;
  }

  f64(n: number): Float64Array {
    return new Float64Array(this.buffer, this.take(8 * n), n);
  }
  u32(n: number): Uint32Array {
    return new Uint32Array(this.buffer, this.take(4 * n), n);
  }
  i32(n: number): Int32Array {
    return new Int32Array(this.buffer, this.take(4 * n), n);
  }
  u16(n: number): Uint16Array {
    return new Uint16Array(this.buffer, this.take(2 * n), n);
  }
  u8(n: number): Uint8Array {
    return new Uint8Array(this.buffer, this.take(n), n);
  }
  i8(n: number): Int8Array {
    return new Int8Array(this.buffer, this.take(n), n);
  }
}
