import type { Notification, NotificationDetail } from '../../states/notification';
import { pushPassed, relativePassed } from '../../states/passed';
import { isQuietNotification } from './transition';

/** What the quiet notifications of one attempt of a task left: raw [code, ts] pairs, details. */
interface Carry {
  attempt: number;
  raw: number[];
  detail: NotificationDetail | undefined;
}

/**
 * Gives `later` what was carried: the states and times go into `detail.passed` (see passed.ts),
 * the other detail fields (where the task ran, when its command ran) along with its own, which
 * win where both have one.
 */
function attach(later: Notification, raw: readonly number[], detail?: NotificationDetail): void {
  const passed = relativePassed(raw, later.ts);
  const own = later.detail;
  if (own?.passed !== undefined) for (const v of own.passed) passed.push(v);
  later.detail = detail === undefined ? { ...own, passed } : { ...detail, ...own, passed };
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

/**
 * The publisher's filter (one per process): drops quiet notifications and carries what each
 * had into the next published notification of its task and attempt, so that the store still
 * holds every state's real time (a complete profile). A carry whose attempt ended without a
 * published notification here (a retry starts elsewhere) is replaced by the next attempt's.
 */
export class QuietCarry {
  private readonly held = new Map<string, Carry>();

  /** Carries held now (tests and leak checks). */
  get size(): number {
    return this.held.size;
  }

  /** `ns` less the quiet ones, the published ones carrying what the quiet ones before them had. */
  pass(ns: readonly Notification[]): readonly Notification[] {
    let out: Notification[] | undefined;
    for (let i = 0; i < ns.length; i++) {
      const n = ns[i]!;
      if (isQuietNotification(n)) {
        out ??= ns.slice(0, i);
        let c = this.held.get(n.uid);
        if (c === undefined || c.attempt !== n.attempt) {
          c = { attempt: n.attempt, raw: [], detail: undefined };
          this.held.set(n.uid, c);
        }
        pushPassed(c.raw, n.state, n.ts);
        if (n.detail !== undefined) {
          c.detail = c.detail === undefined ? n.detail : { ...c.detail, ...n.detail };
        }
        continue;
      }
      if (this.held.size > 0 && n.kind === 'task') {
        const c = this.held.get(n.uid);
        if (c !== undefined) {
          this.held.delete(n.uid);
          if (c.attempt === n.attempt) attach(n, c.raw, c.detail);
        }
      }
      out?.push(n);
    }
    return out ?? ns;
  }
}
