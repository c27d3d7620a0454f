import { ValidationError } from '../../../errors';

/** More hosts than any allocation has: a list expanding past it is refused, not built. */
export const MAX_HOSTS = 100_000;

/** Characters of a host name outside brackets (letters, digits, '.', '_', '-'). */
const NAME_CHARS = /^[A-Za-z0-9._-]*$/;

/**
 * Expands Slurm's compressed host-list syntax into host names, in Slurm's order:
 * `n[1-3]` → n1 n2 n3; `n[01-03,7]` → n01 n02 n03 n7 (a range keeps the width of its lower
 * bound, so zero padding survives); `a1,b[2-3]` → a1 b2 b3; `rack[1-2]-n[1-2]` → rack1-n1
 * rack1-n2 rack2-n1 rack2-n2 (several bracket groups: the first varies slowest).
 * Commas inside brackets separate ranges, commas (or whitespace) outside separate hosts.
 * Text may follow a group (`n[1-2]-ib`), which Slurm 22.05 itself refuses unless another
 * group follows. An empty or blank list expands to no hosts.
 *
 * @throws ValidationError naming the input when the list is malformed (unbalanced or nested
 * brackets, an empty group, a range that is not `lo-hi` with lo <= hi, a stray character) or
 * expands past {@link MAX_HOSTS}.
 */
export function expandHostlist(list: string): string[] {
  const out: string[] = [];
  for (const entry of splitHosts(list)) {
    const parts = parseEntry(list, entry);
    let count = 1;
    for (const p of parts) if (typeof p !== 'string') count *= p.length;
    if (out.length + count > MAX_HOSTS) {
      throw malformed(list, `expands to more than ${MAX_HOSTS} hosts`);
    }
    product(parts, 0, '', out);
  }
  return out;
}

/**
 * Splits at commas and whitespace outside brackets and checks that brackets pair up. Empty
 * entries (`a,,b`, a trailing comma) are skipped, as Slurm's own parser does.
 */
function splitHosts(list: string): string[] {
  const entries: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i <= list.length; i++) {
    const c = list[i];
    if (c === '[') {
      if (depth > 0) throw malformed(list, `nested '[' at position ${i}`);
      depth = 1;
    } else if (c === ']') {
      if (depth === 0) throw malformed(list, `']' without '[' at position ${i}`);
      depth = 0;
    } else if (c === undefined || (depth === 0 && (c === ',' || /\s/.test(c)))) {
      if (c === undefined && depth > 0) throw malformed(list, "'[' is never closed");
      if (i > start) entries.push(list.slice(start, i));
      start = i + 1;
    }
  }
  return entries;
}

/** One host entry as literal text and bracket groups (each group already expanded). */
function parseEntry(list: string, entry: string): (string | string[])[] {
  const parts: (string | string[])[] = [];
  let i = 0;
  while (i < entry.length) {
    const open = entry.indexOf('[', i);
    const literal = open < 0 ? entry.slice(i) : entry.slice(i, open);
    if (!NAME_CHARS.test(literal)) {
      throw malformed(list, `'${entry}' has a character a host name cannot have`);
    }
    if (literal !== '') parts.push(literal);
    if (open < 0) break;
    const close = entry.indexOf(']', open); // splitHosts proved it exists
    parts.push(expandGroup(list, entry.slice(open + 1, close)));
    i = close + 1;
  }
  return parts;
}

/** `01-03,7` → 01 02 03 7. */
function expandGroup(list: string, group: string): string[] {
  if (group === '') throw malformed(list, "empty '[]'");
  const out: string[] = [];
  for (const range of group.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(range);
    if (!m) throw malformed(list, `'${range}' in [${group}] is not a number or a range lo-hi`);
    const lo = m[1]!;
    const hi = m[2] ?? lo;
    const from = Number(lo);
    const to = Number(hi);
    if (from > to) throw malformed(list, `range '${range}' in [${group}] runs backwards`);
    if (to - from + 1 > MAX_HOSTS) {
      throw malformed(list, `expands to more than ${MAX_HOSTS} hosts`);
    }
    for (let n = from; n <= to; n++) out.push(String(n).padStart(lo.length, '0'));
  }
  return out;
}

function product(parts: (string | string[])[], k: number, prefix: string, out: string[]): void {
  if (k === parts.length) {
    out.push(prefix);
    return;
  }
  const p = parts[k]!;
  if (typeof p === 'string') return product(parts, k + 1, prefix + p, out);
  for (const v of p) product(parts, k + 1, prefix + v, out);
}

function malformed(list: string, why: string): ValidationError {
  return new ValidationError(`malformed Slurm host list '${list}': ${why}`, [
    { path: '/', message: why },
  ]);
}
