import { Packr } from 'msgpackr';

// Records make bulks of same-shaped objects compact; each message carries its own structures,
// so any process can decode any message.
const packr = new Packr({ useRecords: true });

/**
 * The msgpack encoding of `value`, in a buffer of its own. msgpackr packs into one shared
 * buffer as large as the largest message so far (megabytes after a big submit) and returns
 * slices of it; a slice held anywhere (a message queued in ZeroMQ, received zero-copy by an
 * inproc peer, kept by the store) would keep that whole buffer alive. One copy is cheap next
 * to the encoding itself.
 */
export function encode(value: unknown): Buffer {
  return Buffer.from(packr.pack(value));
}

/** Decodes one frame; throws on bytes that are not msgpack (callers reject the message). */
export function decode(frame: Buffer): unknown {
  return packr.unpack(frame);
}
