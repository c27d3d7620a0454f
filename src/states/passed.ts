import type { Notification } from './notification';
import { STATE_CODES } from './state-codes';

const CODE = new Map(STATE_CODES.map((s, i) => [s, i]));

/**
 * `detail.passed` of a notification: the states its task passed since its last published
 * notification without one of their own (quiet states), as a flat list of pairs
 * `[state code (STATE_CODES), ms before this notification's ts, ...]`. Small numbers: they
 * encode in a byte or two each and validate as plain numbers, where a map of state names cost
 * the hot path several µs per call.
 */
export type Passed = number[];

/** Adds `state` entered at `ts` to `passed`, whose notification's time is not known yet (raw ts). */
export function pushPassed(passed: number[], state: string, ts: number): void {
  passed.push(CODE.get(state) ?? -1, ts);
}

/** The time `state` was entered, if `n` carries it in `detail.passed`. */
export function passedTs(n: Notification, state: string): number | undefined {
  const p = n.detail?.passed;
  if (p === undefined) return undefined;
  const code = CODE.get(state);
  for (let i = 0; i + 1 < p.length; i += 2) if (p[i] === code) return n.ts - p[i + 1]!;
  return undefined;
}

/** Every [state, ts] `n` carries in `detail.passed` (unknown codes left out). */
export function passedStates(n: Notification): [string, number][] {
  const p = n.detail?.passed;
  const out: [string, number][] = [];
  if (p === undefined) return out;
  for (let i = 0; i + 1 < p.length; i += 2) {
    const state = STATE_CODES[p[i]!];
    if (state !== undefined) out.push([state, n.ts - p[i + 1]!]);
  }
  return out;
}
