import type { ValidationIssue } from '../../errors';
import type { TaskDescription } from '../../generated';
import { encode } from '../../transport/codec';
import { MAX_TASK_BYTES } from '../../transport/frames';

/**
 * Why a task is too large to reach its agent, or none: a task travels to its agent in one
 * message, and no message over the sockets' limit is carried. `upperBytes` (a bound of its
 * encoded size from the submit's walk) spares the encoding of every task that cannot be near
 * the limit; one that may be is encoded, and the issue names the field that takes most of it
 * (`/arguments`, `/function/args`, ...), its size, the task's and the limit.
 */
export function tooLargeIssues(
  d: TaskDescription,
  upperBytes: number,
  limit = MAX_TASK_BYTES,
): ValidationIssue[] {
  if (upperBytes <= limit) return [];
  const bytes = encode(d).length;
  if (bytes <= limit) return [];
  let path = '/';
  let largest = 0;
  const fields: [string, unknown][] = Object.entries(d);
  if (d.function !== undefined) fields.push(['function/args', d.function.args]);
  for (const [key, value] of fields) {
    if (value === undefined || key === 'function') continue;
    const n = encode(value).length;
    if (n > largest) [path, largest] = [`/${key}`, n];
  }
  if (d.function !== undefined && largest < bytes / 2) {
    const n = encode(d.function).length;
    if (n > largest) [path, largest] = ['/function', n];
  }
  const field = path === '/' ? '' : ` (${path.slice(1)}: ${count(largest)} bytes)`;
  return [
    {
      path,
      message: `makes the task ${count(bytes)} bytes encoded${field}, over the ${count(limit)} bytes a task may take (one message to its agent): pass large data as a file (inputStaging) instead`,
    },
  ];
}

const count = (n: number): string => n.toLocaleString('en-US');
