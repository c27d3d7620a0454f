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
    const notPlain = plainDataIssues(input, zones);
    if (notPlain.length > 0) return add(i, notPlain);
    try {
      out.push(parse(input));
    } catch (e) {
      if (!(e instanceof ValidationError)) throw e;
      add(i, e.issues);
    }
  });
  if (issues.length > 0) {
    const text = issuesText(issues);
    throw new ValidationError(`invalid ${what}: ${text}`, issues);
  }
  return out;
}
