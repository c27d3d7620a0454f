import { readFile } from 'node:fs/promises';
import { parseStepStatus, type StepFailure } from '../launch';

/** Files read at once: a task of many ranks must not hold a descriptor per rank. */
const AT_ONCE = 32;

/**
 * What failed in each rank of a task that runs preExec or postExec, from the status files its
 * wrappers wrote (`<prefix>.<rank>`, launch/steps.ts). A missing or unreadable file (the rank
 * was killed, or never started) names nothing.
 */
export async function readStepFailures(prefix: string, ranks: number): Promise<StepFailure[]> {
  const found: StepFailure[] = [];
  for (let from = 0; from < ranks; from += AT_ONCE) {
    const reads: Promise<StepFailure | undefined>[] = [];
    for (let r = from; r < Math.min(ranks, from + AT_ONCE); r++) {
      reads.push(
        readFile(`${prefix}.${r}`, 'utf8').then(
          (text) => parseStepStatus(text, r),
          () => undefined,
        ),
      );
    }
    for (const f of await Promise.all(reads)) if (f !== undefined) found.push(f);
  }
  return found;
}
