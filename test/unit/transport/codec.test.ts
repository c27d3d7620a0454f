import { describe, expect, it } from '@jest/globals';
import { decode, encode } from '../../../src/transport/codec';

describe('encode', () => {
  it('does not pack small messages into the buffer a big one needed', () => {
    const big = encode(Array.from({ length: 50_000 }, (_, i) => ({ uid: `task.${i}`, n: i })));
    const small = encode([{ uid: 'task.0' }]);
    expect(big.length).toBeGreaterThan(512 * 1024);
    expect(small.buffer).not.toBe(big.buffer);
    expect(small.buffer.byteLength).toBeLessThanOrEqual(64 * 1024);
    expect(decode(small)).toEqual([{ uid: 'task.0' }]);
    expect((decode(big) as unknown[]).length).toBe(50_000);
  });
});
