import { Packr } from 'msgpackr';

// Records make bulks of same-shaped objects compact; each message carries its own structures,
// so any process can decode any message.
const packr = new Packr({ useRecords: true });

export function encode(value: unknown): Buffer {
  return packr.pack(value);
}

/** Decodes one frame; throws on bytes that are not msgpack (callers reject the message). */
export function decode(frame: Buffer): unknown {
  return packr.unpack(frame);
}
