import { Packr } from 'msgpackr';

// Records make bulks of same-shaped objects compact; each message carries its own structures,
// so any process can decode any message.
const packr = new Packr({ useRecords: true });

/** The buffer msgpackr packs small messages into, one after another. */
const TARGET_BYTES = 64 * 1024;

/**
 * The msgpack encoding of `value`: a slice of msgpackr's current buffer. msgpackr grows that
 * buffer to the largest message so far and packs every later message into it, so one big
 * message (a submit of thousands of tasks) would make each later small message a slice of
 * megabytes, kept whole by any slice held anywhere (queued in ZeroMQ, received zero-copy by an
 * inproc peer). So after a message that needed a big buffer, that buffer is left to it alone
 * and later messages go to a fresh small one. (Copying every message out cost half the
 * transport bench's throughput.)
 */
export function encode(value: unknown): Buffer {
  const out = packr.pack(value);
  if (out.buffer.byteLength > 4 * TARGET_BYTES) {
    packr.useBuffer(Buffer.allocUnsafeSlow(TARGET_BYTES));
  }
  return out;
}

/** Decodes one frame; throws on bytes that are not msgpack (callers reject the message). */
export function decode(frame: Buffer): unknown {
  return packr.unpack(frame);
}
