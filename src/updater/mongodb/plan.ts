/**
 * Pure parts of the MongoDB backend (src/updater/mongodb/store.ts): documents, write-error
 * classification, contiguous reads by seq, backoff. No driver import, no I/O.
 */
import type { Notification } from '../../generated';
import { coerceError } from '../../errors';
import { notificationKey } from '../../states/notification';
import { StoreError, StoreUnreachableError } from '../state-store';

/** Unique on (session, kind, uid, attempt, state), notifications only: the idempotence key. */
export const KEY_INDEX = 'pf_session_key_unique';
/** Unique on (session, seq), notifications and gap markers: one document per cursor slot. */
export const SEQ_INDEX = 'pf_session_seq_unique';

/** A notification as stored: the notification's fields plus its session and seq slot. */
export interface NotificationDoc extends Notification {
  session: string;
  seq: number;
}

/** Fills a seq slot that holds no notification (a duplicate's slot, or an abandoned one). */
export interface GapDoc {
  session: string;
  seq: number;
  gap: true;
}

export type SlotDoc = NotificationDoc | GapDoc;

export function isGap(doc: SlotDoc): doc is GapDoc {
  return (doc as Partial<GapDoc>).gap === true;
}

/** Drops repeated keys inside one batch, keeping the first of each. */
export function uniqueByKey(batch: readonly Notification[]): Notification[] {
  const seen = new Set<string>();
  const out: Notification[] = [];
  for (const n of batch) {
    const key = notificationKey(n);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(n);
  }
  return out;
}

export function toDoc(session: string, seq: number, n: Notification): NotificationDoc {
  const doc: NotificationDoc = {
    session,
    seq,
    kind: n.kind,
    uid: n.uid,
    attempt: n.attempt,
    state: n.state,
    ts: n.ts,
    component: n.component,
  };
  if (n.detail !== undefined) doc.detail = n.detail;
  return doc;
}

/** The notification part of a stored document (still to be validated: it was read back). */
export function fromDoc(doc: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(doc)) {
    if (k !== '_id' && k !== 'session' && k !== 'seq') out[k] = v;
  }
  return out;
}

/** Filter for the idempotence index: gap markers have no uid and stay out of it. */
export const KEY_PARTIAL_FILTER = { uid: { $exists: true } } as const;

/** The fields of a bulk write error this module looks at. */
export interface WriteErrorLike {
  index: number;
  code?: number | undefined;
  errmsg?: string | undefined;
  keyPattern?: Record<string, unknown> | undefined;
}

export interface WriteErrorClasses {
  /** Positions whose notification was already stored: already there, not a failure. */
  duplicate: number[];
  /** Positions whose seq slot was already taken (by a gap marker): retry with a new seq. */
  slotTaken: number[];
  /** Anything else: a real failure. */
  other: WriteErrorLike[];
}

/**
 * Sorts an unordered insertMany's write errors. Code 11000 on the key index means "already
 * there"; on the seq index it means a watcher declared the slot abandoned (see the store).
 */
export function classifyWriteErrors(errors: readonly WriteErrorLike[]): WriteErrorClasses {
  const out: WriteErrorClasses = { duplicate: [], slotTaken: [], other: [] };
  for (const e of errors) {
    if (e.code !== 11000) {
      out.other.push(e);
      continue;
    }
    const msg = e.errmsg ?? '';
    const pattern = e.keyPattern;
    if (msg.includes(`index: ${SEQ_INDEX} `) || (pattern !== undefined && 'seq' in pattern)) {
      out.slotTaken.push(e.index);
    } else if (
      msg.includes(`index: ${KEY_INDEX} `) ||
      (pattern !== undefined && 'uid' in pattern)
    ) {
      out.duplicate.push(e.index);
    } else {
      out.other.push(e);
    }
  }
  return out;
}

export interface ContiguousRun {
  /** Notifications of the run, in seq order (gap markers skipped). */
  notifications: NotificationDoc[];
  /** The first seq not covered by the run. */
  nextSeq: number;
  /** The first missing seq when documents beyond it were read, else undefined. */
  hole: number | undefined;
}

/**
 * Takes documents sorted by seq, all with seq >= nextSeq, and keeps the run that starts at
 * nextSeq without a missing slot. A missing slot is a write in flight (or abandoned): reading
 * past it could deliver a later seq before an earlier one, so the run stops there.
 */
export function contiguousRun(nextSeq: number, docs: readonly SlotDoc[]): ContiguousRun {
  const notifications: NotificationDoc[] = [];
  let next = nextSeq;
  for (const doc of docs) {
    if (doc.seq < next) continue; // already covered (a re-read)
    if (doc.seq > next) return { notifications, nextSeq: next, hole: next };
    if (!isGap(doc)) notifications.push(doc);
    next++;
  }
  return { notifications, nextSeq: next, hole: undefined };
}

/** Exponential backoff: base·2^attempt, capped at maxMs. */
export function backoffMs(attempt: number, baseMs = 100, maxMs = 5_000): number {
  return Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt));
}

/** Whether the `hello` reply says the server is a replica set member (change streams work). */
export function isReplicaSet(hello: Record<string, unknown>): boolean {
  return typeof hello['setName'] === 'string' && hello['setName'] !== '';
}

/**
 * The write errors of a failed unordered insert (the driver's MongoBulkWriteError, read by its
 * fields), or undefined where the insert failed whole: another error, or a bulk error that
 * lists no write error (the driver wraps a lost connection so) or carries a write concern
 * error. Undefined means nothing is known written: the append fails and is sent again.
 */
export function writeErrorsOf(e: unknown): WriteErrorLike[] | undefined {
  if (!(e instanceof Error) || e.name !== 'MongoBulkWriteError') return undefined;
  const bulk = e as Error & {
    writeErrors?: unknown;
    result?: { getWriteConcernError?: () => unknown };
  };
  const list = ([] as unknown[]).concat(bulk.writeErrors ?? []) as {
    index: number;
    code?: number;
    errmsg?: string;
    err?: { keyPattern?: Record<string, unknown> };
  }[];
  if (list.length === 0 || bulk.result?.getWriteConcernError?.() !== undefined) return undefined;
  return list.map((w) => ({
    index: w.index,
    code: w.code,
    errmsg: w.errmsg,
    keyPattern: w.err?.keyPattern,
  }));
}

/** The driver's errors that mean "no server answers", by name (this module has no driver). */
const UNREACHABLE = new Set([
  'MongoServerSelectionError',
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoPoolClearedError',
  'MongoTopologyClosedError',
]);

/**
 * The DNS lookups of a mongodb+srv:// URI, whose failure the driver passes on as it is (a
 * plain Error with this syscall), while a host it cannot resolve is a server selection error.
 */
const SRV_LOOKUPS = new Set(['querySrv', 'queryTxt']);

/**
 * Whether a failed call failed because no server could be reached (as against a server that
 * answered with an error): what makes a session report its store unreachable.
 */
export function isUnreachableError(e: unknown): boolean {
  const seen = new Set<Error>(); // a cause chain that loops ends where it loops
  // the driver wraps a failed bulk write's error in `errorResponse`, not in `cause`
  const next = (c: Error): unknown => {
    const wrapped = (c as { errorResponse?: unknown }).errorResponse;
    return wrapped instanceof Error ? wrapped : c.cause;
  };
  for (let c: unknown = e; c instanceof Error && !seen.has(c); c = next(c)) {
    seen.add(c);
    if (UNREACHABLE.has(c.name)) return true;
    const syscall = (c as { syscall?: unknown }).syscall;
    if (typeof syscall === 'string' && SRV_LOOKUPS.has(syscall)) return true;
  }
  return false;
}

/**
 * Why connecting failed, naming the servers and never the URI: no server answered (within
 * `waitedMs`, where the URI did not set it), or one answered with an error (`doing`: what it
 * refused, e.g. "refused the session's store").
 */
export function connectError(
  e: unknown,
  hosts: string[],
  since: number,
  waitedMs: number | undefined,
  doing: string,
): Error {
  const reason = coerceError(e).message;
  if (isUnreachableError(e)) {
    const waited =
      waitedMs === undefined
        ? ''
        : ` (none answered within ${waitedMs / 1000} s; serverSelectionTimeoutMS in the URI sets it)`;
    return new StoreUnreachableError({ hosts, reason: reason + waited, since }, { cause: e });
  }
  return new StoreError(`MongoDB at ${hosts.join(',')} ${doing}: ${reason}`, { cause: e });
}
