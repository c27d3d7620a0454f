import { describe, expect, it } from '@jest/globals';
import {
  FRAME_DATA_MAX,
  STREAM_MAGIC,
  StreamFormatError,
  decodeFrames,
  encodeFrame,
  type Frame,
} from '../../../src/lib/output-frames';

const plain = (fs: Frame[]): unknown[] =>
  fs.map((f) => ({ ...f, data: f.data.toString('latin1') }));

describe('output stream frames', () => {
  const file = Buffer.concat([
    STREAM_MAGIC,
    encodeFrame('stdout', 'task.000001', 1, Buffer.from('hello\n')),
    encodeFrame('stderr', 'tâche-2', 3, Buffer.from([0xff, 0x00, 0x0a])),
    encodeFrame('end', 'task.000001', 1),
  ]);

  it('decodes what was encoded, bytes as they were, from the magic on', () => {
    const { frames, next } = decodeFrames(file, 0);
    expect(next).toBe(file.length);
    expect(plain(frames)).toEqual([
      { kind: 'stdout', uid: 'task.000001', attempt: 1, data: 'hello\n' },
      { kind: 'stderr', uid: 'tâche-2', attempt: 3, data: '\xff\x00\n' },
      { kind: 'end', uid: 'task.000001', attempt: 1, data: '' },
    ]);
  });

  it('stops before a frame that is not whole yet, at every cut, and goes on from there', () => {
    const whole = decodeFrames(file, 0).frames;
    for (let cut = 0; cut <= file.length; cut++) {
      const first = decodeFrames(file.subarray(0, cut), 0);
      const rest = decodeFrames(file.subarray(first.next), first.next);
      expect(plain([...first.frames, ...rest.frames])).toEqual(plain(whole));
      expect(rest.next).toBe(file.length);
    }
  });

  it('refuses a file without the header, a bad kind and a size no frame can have', () => {
    expect(() => decodeFrames(Buffer.from('hello, not a stream'), 0)).toThrow(StreamFormatError);
    const kind = Buffer.from(file);
    kind.writeUInt8(9, STREAM_MAGIC.length + 4);
    expect(() => decodeFrames(kind, 0)).toThrow(/damaged output stream at byte 8: frame kind 9/);
    const huge = Buffer.from(file);
    huge.writeUInt32LE(0xffffffff, STREAM_MAGIC.length);
    // a follower would wait forever for a frame of 4 GiB: refused at once instead
    expect(() => decodeFrames(huge.subarray(0, 20), 0)).toThrow(/frame of 4294967295 bytes/);
  });

  it('refuses to encode more data than a frame holds', () => {
    expect(() => encodeFrame('stdout', 'u', 1, Buffer.alloc(FRAME_DATA_MAX + 1))).toThrow(
      RangeError,
    );
  });
});
