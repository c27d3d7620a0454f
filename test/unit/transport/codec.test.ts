import { describe, expect, it } from '@jest/globals';
import { decode, encode } from '../../../src/transport/codec';

describe('encode', () => {
  it("gives each message a buffer of its own, not a slice of the encoder's shared one", () => {
    const big = encode(Array.from({ length: 50_000 }, (_, i) => ({ uid: `task.${i}`, n: i })));
    const small = encode([{ uid: 'task.0' }]);
    expect(big.buffer.byteLength).toBe(big.length); // large: exactly its own bytes
    // small: from Node's 8 KiB buffer pool at most, never the megabyte the big one needed
    expect(small.buffer.byteLength).toBeLessThanOrEqual(8 * 1024);
    expect(decode(small)).toEqual([{ uid: 'task.0' }]);
    expect((decode(big) as unknown[]).length).toBe(50_000);
  });
});
