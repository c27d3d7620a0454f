/**
 * What a function may return: plain data any msgpack reader decodes the same way (the task's
 * result may be read by a client in another language). Accepted:
 *   null, booleans, numbers (integers as msgpack ints, others as float64, NaN and Infinity too),
 *   strings, BigInts within 64 bits (int64/uint64), Uint8Array and Buffer (bin), valid Dates
 *   (the msgpack timestamp extension), arrays, plain objects (prototype Object or null; their
 *   own enumerable string keys), nested; `undefined` as the whole value (nil: a function that
 *   returns nothing) or as an object property (left out, as JSON.stringify does).
 * Refused, naming the path of the value (`result.items[3].fn: a function cannot be encoded`):
 *   functions, symbols, undefined in an array, BigInts beyond 64 bits, other typed arrays and
 *   ArrayBuffers, Maps, Sets, class instances (Errors included), invalid Dates, cycles, and
 *   nesting deeper than MAX_DEPTH. Refusing beats a silent change of type on the way.
 * Pure, and loaded by the worker at start: msgpackr and nothing else.
 */
import { Packr, type Options } from 'msgpackr';
import type { WireError } from './protocol';

/** Deeper values are refused: the encoder and every decoder recurse per level. */
export const MAX_DEPTH = 512;

const INT64_MIN = -(2n ** 63n);
const UINT64_MAX = 2n ** 64n - 1n;
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** The path of `key` under `path`, as JavaScript would write it. */
function child(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return IDENTIFIER.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

/** `a Map`, `an instance of class Foo`, `an object with a custom prototype`. */
function describeObject(value: object): string {
  const name = (value.constructor as { name?: unknown } | undefined)?.name;
  if (typeof name !== 'string' || name === '') return 'an object with a custom prototype';
  if (['Map', 'Set', 'WeakMap', 'WeakSet'].includes(name)) return `a ${name}`;
  return `an instance of class ${name}`;
}

/** Why `value` cannot be encoded (`path: what`), or undefined when it can. */
export function unencodable(value: unknown, path = 'result'): string | undefined {
  if (value === undefined) return undefined;
  return check(value, path, [], 0);
}

function check(value: unknown, path: string, parents: object[], depth: number): string | undefined {
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
      return undefined;
    case 'bigint':
      return value < INT64_MIN || value > UINT64_MAX
        ? `${path}: a BigInt beyond 64 bits cannot be encoded (${value})`
        : undefined;
    case 'undefined':
      return `${path}: undefined in an array cannot be encoded (use null)`;
    case 'function':
      return `${path}: a function cannot be encoded`;
    case 'symbol':
      return `${path}: a symbol cannot be encoded`;
    case 'object':
      break;
  }
  if (value === null) return undefined;
  const obj = value;
  if (obj instanceof Uint8Array) return undefined;
  if (obj instanceof Date) {
    return Number.isNaN(obj.getTime()) ? `${path}: an invalid Date cannot be encoded` : undefined;
  }
  if (ArrayBuffer.isView(obj) || obj instanceof ArrayBuffer) {
    const name = obj.constructor.name;
    return `${path}: a ${name} cannot be encoded (return its bytes as a Uint8Array, or an array)`;
  }
  const parent = parents.indexOf(obj);
  if (parent >= 0) return `${path}: a cycle (it is the value at ${cyclePath(path, parent)})`;
  if (depth >= MAX_DEPTH) return `${path}: nested deeper than ${MAX_DEPTH} levels`;
  parents.push(obj);
  try {
    if (Array.isArray(obj)) {
      for (let i = 0; i < obj.length; i++) {
        const bad = check(obj[i] as unknown, child(path, i), parents, depth + 1);
        if (bad !== undefined) return bad;
      }
      return undefined;
    }
    const proto = Object.getPrototypeOf(obj) as unknown;
    if (proto !== Object.prototype && proto !== null) {
      return `${path}: ${describeObject(obj)} cannot be encoded (return plain objects and arrays)`;
    }
    for (const key of Object.keys(obj)) {
      const v = (obj as Record<string, unknown>)[key];
      if (v === undefined) continue;
      const bad = check(v, child(path, key), parents, depth + 1);
      if (bad !== undefined) return bad;
    }
    return undefined;
  } finally {
    parents.pop();
  }
}

/**
 * The path of the `index`th object on the way to `path`: the paths are not kept while walking
 * (that would cost every value a string), so it is cut from `path` by counting its steps.
 */
function cyclePath(path: string, index: number): string {
  const steps = path.match(/^[^.[]+|\.[A-Za-z_$][\w$]*|\[(?:\d+|"(?:[^"\\]|\\.)*")\]/g) ?? [path];
  return steps.slice(0, index + 1).join('');
}

/** The encoder of results: plain maps, undefined properties left out (JSON.stringify's rule). */
const valuePackr = new Packr({
  useRecords: false,
  variableMapSize: true,
  encodeUndefinedAsNil: true,
  useToJSON: false,
  // in msgpackr's README, not yet in its types
  skipValues: [undefined],
} as Options & { skipValues: unknown[] });

export type Encoded = { ok: true; bytes: Buffer } | { ok: false; error: WireError };

/** The encoding of nothing, shared: it is only ever copied into a reply. */
const NIL: Encoded = { ok: true, bytes: Buffer.from([0xc0]) };

/**
 * The msgpack encoding of what a function returned (a buffer of its own), or the error to
 * report in phase 'encode': the path of a value that cannot be encoded, or the size over the
 * limit.
 */
export function encodeResult(value: unknown, maxResultBytes: number): Encoded {
  // a function that returns nothing: most of them
  if (value == null && maxResultBytes >= 1) return NIL;
  const bad = unencodable(value);
  if (bad !== undefined) return { ok: false, error: { name: 'EncodeError', message: bad } };
  let packed: Buffer;
  try {
    packed = valuePackr.pack(value);
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    return { ok: false, error: { name: 'EncodeError', message: `result: ${message}` } };
  }
  if (packed.length > maxResultBytes) {
    const message =
      `result is ${sizeText(packed.length)} encoded, over the limit of ` +
      `${sizeText(maxResultBytes)}: return less, or write it to a file and return its path`;
    return { ok: false, error: { name: 'ResultTooLarge', message } };
  }
  // packr's buffer is reused by the next pack: the result needs bytes of its own
  return { ok: true, bytes: Buffer.from(packed) };
}

/** `1048577 bytes (1.0 MiB)`. */
export function sizeText(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  const unit = bytes < 1024 * 1024 ? 'KiB' : 'MiB';
  const scaled = bytes / (unit === 'KiB' ? 1024 : 1024 * 1024);
  return `${bytes} bytes (${scaled.toFixed(1)} ${unit})`;
}
