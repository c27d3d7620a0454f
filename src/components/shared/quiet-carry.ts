import type { Notification, NotificationDetail } from '../../states/notification';
import { pushPassed } from '../../states/passed';

/**
 * What the quiet notifications of a task left for its next published one (raw [code, ts] pairs
 * and their details), kept on the task's record under a symbol: msgpack, JSON and the
 * validators see only string keys, so it never leaves the process, and a record made for a
 * new attempt starts without one. On the record rather than in a map by uid: a map's insert
 * and delete per task cost the client 2.5 µs per function call.
 */
const CARRY = Symbol('quiet states not yet published');

interface Carry {
  raw: number[];
  detail: NotificationDetail | undefined;
}

type Carrying = { [CARRY]?: Carry | undefined };

/**
 * Keeps what a quiet notification `n` of `task` says until the task's next published one, or
 * gives that one what was kept (see attach). Called for every notification transition() makes.
 */
export function carry(task: object, n: Notification, quiet: boolean): void {
  const t = task as Carrying;
  let c = t[CARRY];
  if (!quiet && c === undefined) return; // most transitions: one property read
  if (quiet) {
    if (c === undefined) t[CARRY] = c = { raw: [], detail: undefined };
    pushPassed(c.raw, n.state, n.ts);
    if (n.detail !== undefined) {
      c.detail = c.detail === undefined ? n.detail : { ...c.detail, ...n.detail };
    }
  } else {
    t[CARRY] = undefined; // not deleted: a delete turns the record into a slow dictionary
    attach(n, c!.raw, c!.detail);
  }
}

/**
 * Drops what `task` carries for its next published notification: it moved on without one, and
 * nobody reads its notifications (see shift in transition.ts). Kept, it would live as long as the
 * record does.
 */
export function forgetCarried(task: object): void {
  const t = task as Carrying;
  // written only where there is one: adding the key to every record costs a property each
  if (t[CARRY] !== undefined) t[CARRY] = undefined;
}

/**
 * Gives `later` what was carried: the states and times go into `detail.passed` (see passed.ts),
 * the other detail fields (where the task ran, when its command ran) along with its own, which
 * win where both have one. Its detail is changed in place: each notification's detail is made
 * for it alone, and a copy (a spread of differently shaped objects) cost µs per call.
 */
function attach(later: Notification, raw: readonly number[], detail?: NotificationDetail): void {
  let own = later.detail;
  if (own === undefined) later.detail = own = {};
  const passed = (own.passed ??= []);
  const at = later.ts;
  for (let i = 0; i + 1 < raw.length; i += 2) passed.push(raw[i]!, at - raw[i + 1]!);
  if (detail === undefined) return;
  const to = own as Record<string, unknown>;
  const from = detail as Record<string, unknown>;
  for (const k in from) if (to[k] === undefined) to[k] = from[k];
}

/**
 * Gives `later` a published notification that is dropped because `later` supersedes it (a
 * function call's held start): its state and time, what it carried, and its detail.
 */
export function carryInto(later: Notification, dropped: Notification): void {
  const raw: number[] = [];
  const p = dropped.detail?.passed;
  if (p !== undefined) {
    for (let i = 0; i + 1 < p.length; i += 2) raw.push(p[i]!, dropped.ts - p[i + 1]!);
  }
  pushPassed(raw, dropped.state, dropped.ts);
  let detail: NotificationDetail | undefined;
  for (const k in dropped.detail) {
    if (k === 'passed') continue;
    detail ??= {};
    (detail as Record<string, unknown>)[k] = (dropped.detail as Record<string, unknown>)[k];
  }
  attach(later, raw, detail);
}
