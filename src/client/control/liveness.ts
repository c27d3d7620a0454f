import { lstatSync } from 'node:fs';
import { connect } from 'node:net';
import * as path from 'node:path';
import { UsageError } from '../../errors';
import { CONTROL_SOCKET } from './protocol';

/**
 * Refuses to resume the session in `dir` while its client still runs (it answers on its control
 * socket): two clients would then bind the same addresses and write the same store.
 */
export async function refuseIfLive(dir: string): Promise<void> {
  const file = path.join(dir, CONTROL_SOCKET);
  if (lstatSync(file, { throwIfNoEntry: false })?.isSocket() === true && (await answers(file))) {
    throw new UsageError(
      `cannot resume ${path.basename(dir)}: its client still runs (it answers on ${file}); ` +
        'a session is resumed once its client has died',
    );
  }
}

/** Whether something accepts connections on the socket `file` (a refused connect: nobody). */
export function answers(file: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect(file);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
}
