import type { Notification } from '../states/notification';
import { COMPONENT_CODES, KIND_CODES, STATE_CODES } from '../states/state-codes';
import { decode, encode } from '../transport/codec';

export { COMPONENT_CODES, KIND_CODES, STATE_CODES } from '../states/state-codes';

/**
 * How notifications are encoded where many are (the embedded store's records, the batches an
 * UpdateWorker sends a StoreServer): each as a tuple `[kind, uid, attempt, state, ts,
 * component, detail?]`, where kind, state and component are small numbers from the tables
 * below (or the string itself, for one no table has). A notification's field names and its
 * three enum strings were most of its bytes and of the encoder's time: a tuple encodes about
 * three times faster than the object. Records written before this format hold the objects
 * themselves; the decoders take either, element by element.
 * The code tables are in src/states/state-codes.ts.
 */
const codesOf = (table: readonly string[]): Map<string, number> =>
  new Map(table.map((s, i) => [s, i]));
const KIND = codesOf(KIND_CODES);
const STATE = codesOf(STATE_CODES);
const COMPONENT = codesOf(COMPONENT_CODES);

type Tuple = [
  number | string,
  string,
  number,
  number | string,
  number,
  number | string,
  Notification['detail']?,
];

/** The payload of a record holding `ns`. */
export function encodeNotifications(ns: readonly Notification[]): Buffer {
  return encode(toTuples(ns));
}

/** `ns` as tuples, to be encoded in a message. */
export function toTuples(ns: readonly Notification[]): unknown[] {
  const tuples = new Array<Tuple>(ns.length);
  for (let i = 0; i < ns.length; i++) {
    const n = ns[i]!;
    const t: Tuple = [
      KIND.get(n.kind) ?? n.kind,
      n.uid,
      n.attempt,
      STATE.get(n.state) ?? n.state,
      n.ts,
      COMPONENT.get(n.component) ?? n.component,
    ];
    if (n.detail !== undefined) t.push(n.detail);
    tuples[i] = t;
  }
  return tuples;
}

/**
 * The items of a record's payload, as notification objects (not validated: the caller checks
 * what it did not write itself). Throws when the payload is not msgpack; what is not an array
 * comes back as it is, for the caller to reject.
 */
export function decodeNotifications(payload: Buffer): unknown {
  const items = decode(payload);
  if (Array.isArray(items)) fromTuples(items);
  return items;
}

/** Turns the tuples among decoded `items` back into objects, in place. */
export function fromTuples(items: unknown[]): void {
  for (let i = 0; i < items.length; i++) {
    const t: unknown = items[i];
    if (Array.isArray(t)) items[i] = fromTuple(t);
  }
}

/** A tuple back to its object; an element of the wrong shape stays one the validator rejects. */
function fromTuple(t: unknown[]): unknown {
  const n: Record<string, unknown> = {
    kind: lookup(KIND_CODES, t[0]),
    uid: t[1],
    attempt: t[2],
    state: lookup(STATE_CODES, t[3]),
    ts: t[4],
    component: lookup(COMPONENT_CODES, t[5]),
  };
  if (t.length > 6) n.detail = t[6];
  if (t.length > 7) n.extra = t.slice(7); // not a notification: validation says so
  return n;
}

function lookup(table: readonly string[], v: unknown): unknown {
  return typeof v === 'number' && Number.isInteger(v) ? (table[v] ?? v) : v;
}
