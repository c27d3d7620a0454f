import type { Notification } from '../../states/notification';
import { isQuietNotification } from './transition';

/**
 * What a notification that is not published leaves to the next published one of its task, so
 * that the store still holds every state's real time (a complete profile): its state and ts go
 * into `detail.passed`, its other detail fields (where the task ran, when its command ran) along
 * with the later notification's own, which win where both have one.
 */
export function carryInto(later: Notification, dropped: Notification): void {
  const passed = {
    ...dropped.detail?.passed,
    [dropped.state]: dropped.ts,
    ...later.detail?.passed,
  };
  later.detail = { ...dropped.detail, ...later.detail, passed };
}

/**
 * The publisher's filter (one per process): drops quiet notifications and carries each into
 * the next published notification of its task and attempt. A carry whose attempt ended without
 * a published notification here (a retry starts elsewhere) is replaced by the next attempt's.
 */
export class QuietCarry {
  private readonly held = new Map<string, Notification>();

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
        const before = this.held.get(n.uid);
        if (before !== undefined && before.attempt === n.attempt) carryInto(n, before);
        this.held.set(n.uid, n);
        continue;
      }
      if (this.held.size > 0 && n.kind === 'task') {
        const before = this.held.get(n.uid);
        if (before !== undefined) {
          this.held.delete(n.uid);
          if (before.attempt === n.attempt) carryInto(n, before);
        }
      }
      out?.push(n);
    }
    return out ?? ns;
  }
}
