import { issuesText, ValidationError, type ValidationIssue } from '../../errors';

/** What a wait or a cancel names: some uids, and for a wait the states to reach. */
export interface Selection {
  uids?: unknown;
  states?: unknown;
  timeoutMs?: unknown;
}

/**
 * Checks what a wait or a cancel names, so that a misspelt state or an unknown uid is an error
 * at once instead of a wait that never ends or a cancel that does nothing. Throws a
 * ValidationError with one issue per bad entry (`/uids/2 …`, `/states/0 must be one of …`).
 */
export function checkSelection(
  call: string,
  sel: Selection,
  known: (uid: string) => boolean,
  what: string,
  states?: readonly string[],
): void {
  const issues: ValidationIssue[] = [];
  if (sel.uids !== undefined) {
    if (!Array.isArray(sel.uids)) issues.push({ path: '/uids', message: 'must be array' });
    else {
      sel.uids.forEach((u: unknown, i) => {
        if (typeof u !== 'string') issues.push({ path: `/uids/${i}`, message: 'must be string' });
        else if (!known(u)) issues.push({ path: `/uids/${i}`, message: `'${u}' is not ${what}` });
      });
    }
  }
  if (sel.states !== undefined && states !== undefined) {
    if (!Array.isArray(sel.states)) issues.push({ path: '/states', message: 'must be array' });
    else {
      const allowed = states.map((s) => JSON.stringify(s)).join(', ');
      sel.states.forEach((s: unknown, i) => {
        if (typeof s !== 'string' || !states.includes(s)) {
          issues.push({ path: `/states/${i}`, message: `must be one of ${allowed}` });
        }
      });
    }
  }
  const t = sel.timeoutMs;
  if (t !== undefined && (typeof t !== 'number' || !(t >= 0))) {
    issues.push({ path: '/timeoutMs', message: 'must be a number >= 0' });
  }
  if (issues.length > 0) {
    const text = issuesText(issues);
    throw new ValidationError(`invalid ${call} arguments: ${text}`, issues);
  }
}
