import { issuesText, ValidationError, type ValidationIssue } from '../../errors';
import { plainDataIssues, type BinaryZones } from '../../lib/plain-data';

/**
 * Validates a list of inputs with `parse`, collecting every item's issues with its index in
 * the path (`/3/executable`), so one error names everything wrong in a submission. Each input
 * must be plain JSON data first (bytes and dates only in `zones`): a Map or a Date would pass
 * the schema as an empty object.
 */
export function validateAll<T>(
  inputs: unknown,
  parse: (x: unknown) => T,
  what: string,
  zones?: BinaryZones,
  /** Issues of a valid input whose encoding may be `upperBytes` long (a size limit). */
  checkSize?: (input: T, upperBytes: number) => ValidationIssue[],
): T[] {
  if (!Array.isArray(inputs)) {
    throw new ValidationError(`invalid ${what} list: / must be array`, [
      { path: '/', message: 'must be array' },
    ]);
  }
  const out: T[] = [];
  const issues: ValidationIssue[] = [];
  const add = (i: number, found: readonly ValidationIssue[]): void => {
    for (const issue of found) {
      issues.push({ path: `/${i}${issue.path === '/' ? '' : issue.path}`, message: issue.message });
    }
  };
  inputs.forEach((input: unknown, i) => {
    const size = { bytes: 0 };
    const notPlain = plainDataIssues(input, zones, size);
    if (notPlain.length > 0) return add(i, notPlain);
    let parsed: T;
    try {
      parsed = parse(input);
    } catch (e) {
      if (!(e instanceof ValidationError)) throw e;
      return add(i, e.issues);
    }
    const tooLarge = checkSize?.(parsed, size.bytes) ?? [];
    if (tooLarge.length > 0) return add(i, tooLarge);
    out.push(parsed);
  });
  if (issues.length > 0) {
    const text = issuesText(issues);
    throw new ValidationError(`invalid ${what}: ${text}`, issues);
  }
  return out;
}
