import { describe, expect, it } from '@jest/globals';
import {
  FrameError,
  FrameReader,
  frame,
  protocolCodec,
} from '../../../../../../src/components/executor/functions/worker/protocol';

const codec = protocolCodec();

/** Frames of these messages, one after another in a single buffer. */
function stream(messages: unknown[]): Buffer {
  return Buffer.concat(messages.map((m) => frame(codec.pack(m))));
}

function readAll(reader: FrameReader, chunks: Buffer[]): unknown[] {
  return chunks.flatMap((c) => reader.push(c)).map((p) => codec.unpack(p));
}

describe('function worker framing', () => {
  const messages = [
    { t: 'calls', calls: [{ id: 1, module: '/m.js', args: [1, 'two', { three: [3] }] }] },
    { t: 'cancel', ids: [1, 2] },
    { t: 'done', results: [{ id: 1, ok: true, value: Buffer.from([0x93, 1, 2, 3]) }] },
    {},
  ];

  it('prefixes each payload with its length, big-endian', () => {
    const f = frame(Buffer.from('abc'));
    expect([...f]).toEqual([0, 0, 0, 3, 0x61, 0x62, 0x63]);
  });

  it('reads several frames from one chunk', () => {
    expect(readAll(new FrameReader(1 << 20), [stream(messages)])).toEqual(messages);
  });

  it('reads frames split at every byte, headers included', () => {
    const bytes = stream(messages);
    for (let cut = 1; cut < bytes.length; cut++) {
      const parts = [bytes.subarray(0, cut), bytes.subarray(cut)];
      expect(readAll(new FrameReader(1 << 20), parts)).toEqual(messages);
    }
  });

  it('reads a stream fed one byte at a time', () => {
    const bytes = stream(messages);
    const ones = [...bytes].map((b) => Buffer.from([b]));
    const reader = new FrameReader(1 << 20);
    expect(readAll(reader, ones)).toEqual(messages);
    expect(reader.pending).toBe(0);
  });

  it('keeps the bytes of an incomplete frame until the rest comes', () => {
    const bytes = stream(messages.slice(0, 2));
    const reader = new FrameReader(1 << 20);
    expect(reader.push(bytes.subarray(0, bytes.length - 1))).toHaveLength(1);
    expect(reader.pending).toBeGreaterThan(0);
    expect(reader.push(bytes.subarray(bytes.length - 1))).toHaveLength(1);
    expect(reader.pending).toBe(0);
  });

  it('refuses a frame announced over the limit, naming both sizes', () => {
    const reader = new FrameReader(100);
    const head = Buffer.alloc(4);
    head.writeUInt32BE(101, 0);
    expect(() => reader.push(head)).toThrow(FrameError);
    expect(() => new FrameReader(100).push(head)).toThrow(
      'frame of 101 bytes announced, over the limit of 100',
    );
  });

  it('carries bins as bytes of their own, not views of the chunk', () => {
    const bytes = stream([messages[2]]);
    const [payload] = new FrameReader(1 << 20).push(bytes);
    const m = codec.unpack(payload!) as { results: { value: Uint8Array }[] };
    const value = m.results[0]!.value;
    expect([...value]).toEqual([0x93, 1, 2, 3]);
    expect(value.buffer).not.toBe(bytes.buffer);
  });
});
