import { issuesText, ValidationError, type ValidationIssue } from '../../errors';

/**
 * Validates a list of inputs with `parse`, collecting every item's issues with its index in
 * the path (`/3/executable`), so one error names everything wrong in a submission.
 */
export function validateAll<T>(inputs: unknown, parse: (x: unknown) => T, what: string): T[] {
  if (!Array.isArray(inputs)) {
    throw new ValidationError(`invalid ${what} list: / must be array`, [
      { path: '/', message: 'must be array' },
    ]);
  }
  const out: T[] = [];
  const issues: ValidationIssue[] = [];
  inputs.forEach((input, i) => {
    try {
      out.push(parse(input));
    } catch (e) {
      if (!(e instanceof ValidationError)) throw e;
      for (const issue of e.issues) {
        issues.push({
          path: `/${i}${issue.path === '/' ? '' : issue.path}`,
          message: issue.message,
        });
      }
    }
  });
  if (issues.length > 0) {
    const text = issuesText(issues);
    throw new ValidationError(`invalid ${what}: ${text}`, issues);
  }
  return out;
}
