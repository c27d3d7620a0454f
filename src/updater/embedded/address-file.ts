import { promises as fsp } from 'node:fs';
import type { PublishedAddresses } from '../../generated';
import { PRIVATE_FILE } from '../../lib/private-files';
import { parsePublishedAddresses } from '../../lib/validate';
import { StoreError } from '../state-store';

/**
 * Where an embedded session's resumed client listens when it could not bind its old ports: a
 * file in the session's directory (0700, the file 0600), so only the session's owner can write
 * what its agents follow; the MongoDB sessions' AddressBoard, for a directory the agents see.
 */
export class AddressFile {
  constructor(readonly file: string) {}

  /** The addresses published last, checked against their schema; undefined where none. */
  async read(_session?: string): Promise<PublishedAddresses | undefined> {
    let text: string;
    try {
      text = await fsp.readFile(this.file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
    try {
      return parsePublishedAddresses(JSON.parse(text));
    } catch (e) {
      throw new StoreError(`${this.file} is not valid: ${(e as Error).message}`, { cause: e });
    }
  }

  /**
   * Publishes `addresses` over a lower epoch only (another client that resumed meanwhile
   * wins), whole: written beside, then renamed over the old file.
   */
  async publish(_session: string, addresses: PublishedAddresses): Promise<void> {
    const now = await this.read();
    if (now !== undefined && now.epoch >= addresses.epoch) {
      throw new StoreError(
        `epoch ${addresses.epoch} of the addresses, or a later one, is published already in ${this.file}: another client resumed the session meanwhile`,
      );
    }
    const tmp = `${this.file}.${process.pid}.tmp`;
    await fsp.writeFile(tmp, JSON.stringify(addresses) + '\n', { mode: PRIVATE_FILE });
    await fsp.rename(tmp, this.file);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
