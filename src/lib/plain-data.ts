import type { ValidationIssue } from '../errors';

/**
 * Where bytes and dates may stand besides JSON data: a tree of property names whose leaves
 * (`true`) allow, at and below them, what msgpack carries beyond JSON (a Uint8Array or Buffer,
 * a valid Date, a non-finite number). Task descriptions: `{ function: { args: true } }`.
 */
export type BinaryZones = { readonly [key: string]: BinaryZones | true };

/** Deeper than this is refused: nothing a description needs (a cycle is named as one). */
const MAX_DEPTH = 512;

interface Entry {
  readonly v: unknown;
  readonly parent: Entry | undefined;
  readonly key: string | number;
  readonly depth: number;
  readonly zone: BinaryZones | true | undefined;
}

function pathOf(e: Entry): string {
  const keys: (string | number)[] = [];
  for (let at: Entry | undefined = e; at?.parent !== undefined; at = at.parent) keys.push(at.key);
  if (keys.length === 0) return '/';
  let out = '';
  for (let i = keys.length - 1; i >= 0; i--) {
    out += '/' + String(keys[i]).replace(/~/g, '~0').replace(/\//g, '~1');
  }
  return out;
}

/**
 * How many levels above `e` its value `obj` is already (a cycle), or undefined: a count, not a
 * path, since callers prefix the paths of issues. Walking up costs the depth, which is small in
 * what is submitted (a description's values nest a few levels).
 */
function levelsUpTo(e: Entry, obj: object): number | undefined {
  let up = 1;
  for (let at = e.parent; at !== undefined; at = at.parent, up++) if (at.v === obj) return up;
  return undefined;
}

/** What a value that is not plain JSON data is, for the message. */
function kindOf(v: object): string {
  if (v instanceof Map) return 'a Map';
  if (v instanceof Set) return 'a Set';
  if (v instanceof RegExp) return 'a RegExp';
  if (v instanceof Date) return 'a Date';
  if (Buffer.isBuffer(v)) return 'a Buffer';
  if (ArrayBuffer.isView(v)) return `a ${v.constructor.name}`;
  if (v instanceof Error) return `an ${v.constructor.name}`;
  const ctor = (Object.getPrototypeOf(v) as { constructor?: { name?: unknown } } | null)
    ?.constructor?.name;
  return typeof ctor === 'string' && ctor !== '' ? `an instance of ${ctor}` : 'not a plain object';
}

/**
 * The issues of a value that is not plain JSON data (objects whose prototype is Object's or
 * null, arrays, strings, finite numbers, booleans, null), each naming its JSON path: ajv sees a
 * Map, a RegExp or a Date as an object with no properties and passes it, and the encoder then
 * sends `{}`. An `undefined` property is left out, as JSON does; `undefined` in an array is
 * refused, and so is a cycle (naming the path it leads back to). One iterative walk, no copy:
 * submit checks every description of a bulk with it.
 */
export function plainDataIssues(
  value: unknown,
  zones?: BinaryZones,
  /** Adds an upper bound of the value's msgpack size to `bytes` (what a string may take). */
  size?: { bytes: number },
): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  let bytes = 0;
  const stack: Entry[] = [{ v: value, parent: undefined, key: '', depth: 0, zone: zones }];
  const refuse = (e: Entry, message: string): void => {
    issues.push({ path: pathOf(e), message });
  };
  while (stack.length > 0) {
    const e = stack.pop()!;
    const v = e.v;
    const binary = e.zone === true;
    switch (typeof v) {
      case 'string':
        bytes += 5 + 3 * v.length; // a UTF-16 unit takes at most 3 bytes of UTF-8
        continue;
      case 'boolean':
        bytes += 1;
        continue;
      case 'number':
        bytes += 9;
        if (!binary && !Number.isFinite(v)) refuse(e, `must be a finite number (${v} is not JSON)`);
        continue;
      case 'undefined':
        // only reached for array items and the root: undefined properties are skipped below
        refuse(e, 'must be JSON data (undefined is not: use null)');
        continue;
      case 'function':
      case 'symbol':
      case 'bigint':
        refuse(e, `must be JSON data (a ${typeof v} is not)`);
        continue;
      case 'object':
        break;
    }
    bytes += 5;
    if (v === null) continue;
    if (e.depth >= MAX_DEPTH) {
      refuse(e, `must nest at most ${MAX_DEPTH} levels`);
      continue;
    }
    const obj = v;
    let items: unknown[] | undefined;
    if (Array.isArray(obj)) {
      items = obj;
    } else {
      const proto: unknown = Object.getPrototypeOf(obj);
      if (proto !== Object.prototype && proto !== null) {
        if (binary && (obj instanceof Uint8Array || (obj instanceof Date && !isNaN(+obj)))) {
          bytes += obj instanceof Uint8Array ? obj.length + 5 : 15;
          continue;
        }
        refuse(
          e,
          `must be JSON data (${kindOf(obj)} is not${binary ? '; bytes and valid dates are' : ''})`,
        );
        continue;
      }
    }
    const up = levelsUpTo(e, obj);
    if (up !== undefined) {
      refuse(e, `must not be a cycle (it is the value ${up} level${up === 1 ? '' : 's'} up)`);
      continue;
    }
    const depth = e.depth + 1;
    if (items !== undefined) {
      for (let i = items.length - 1; i >= 0; i--) {
        // a hole is undefined too
        stack.push({ v: items[i], parent: e, key: i, depth, zone: binary ? true : undefined });
      }
      continue;
    }
    const record = obj as Record<string, unknown>;
    const keys = Object.keys(record);
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i]!;
      const child = record[key];
      if (child === undefined) continue;
      bytes += 5 + 3 * key.length;
      const zone = binary
        ? true
        : e.zone !== undefined && Object.hasOwn(e.zone, key)
          ? e.zone[key]
          : undefined;
      stack.push({ v: child, parent: e, key, depth, zone });
    }
  }
  if (size !== undefined) size.bytes += bytes;
  return issues;
}
