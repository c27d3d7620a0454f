import { UsageError } from '../errors';
import { EXIT } from './args';

/**
 * Runs a command's work: a UsageError (no such session, a socket this user may not open) is a
 * message on stderr and exit 2; anything else goes on to main (exit 1).
 */
export async function usageErrors(work: () => Promise<number>): Promise<number> {
  try {
    return await work();
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`pilotfish: ${e.message}\n`);
    return EXIT.usage;
  }
}
