import { StringDecoder } from 'node:string_decoder';

/**
 * Cuts UTF-8 bytes that come in pieces into lines: a character or a line split between two
 * pieces comes out whole.
 */
export class LineSplitter {
  private partial = '';
  private decoder = new StringDecoder('utf8');

  /** The lines this piece completes (without their '\n'). */
  push(bytes: Buffer): string[] {
    return this.lines(this.decoder.write(bytes));
  }

  /** The lines decoded text completes (for a reader that decodes itself). */
  lines(text: string): string[] {
    if (text === '') return [];
    const lines = (this.partial + text).split('\n');
    this.partial = lines.pop()!;
    return lines;
  }

  /** Text of bytes pushed, decoded (see `lines`). */
  decode(bytes: Buffer): string {
    return this.decoder.write(bytes);
  }

  /** The partial last line (no '\n' after it), once; undefined when there is none. */
  rest(): string | undefined {
    const rest = this.partial + this.decoder.end();
    this.partial = '';
    return rest === '' ? undefined : rest;
  }

  /** Starts afresh (the file was truncated). */
  reset(): void {
    this.partial = '';
    this.decoder = new StringDecoder('utf8');
  }
}
