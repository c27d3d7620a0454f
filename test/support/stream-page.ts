import * as fs from 'node:fs';
import { encodeFrame } from '../../src/lib/output-frames';

const PAGE = 4096;

/**
 * Appends to a stream file a frame of task `pad` (no task of any session) that ends the file at a
 * page boundary: on a tmpfs that is full, the next frame then needs a page there is none of
 * (frames that fit in the last page's slack would still be written).
 */
export function padStreamFile(file: string): void {
  const size = fs.statSync(file).size;
  const head = encodeFrame('stdout', 'pad', 1).length;
  let room = PAGE - (size % PAGE);
  if (room < head) room += PAGE;
  fs.appendFileSync(file, encodeFrame('stdout', 'pad', 1, Buffer.alloc(room - head, 0x2e)));
}
