/** Time as a dependency, so decision cores and their tests never touch the real clock. */
export interface Timer {
  cancel(): void;
}

export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): Timer;
}

/**
 * The longest delay Node's setTimeout takes (2^31 - 1 ms, about 24.8 days); a longer one fires
 * at once, with a warning. A pilot's runtime limit can be longer.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    // a delay beyond MAX_TIMER_MS is waited in steps, each re-armed against the deadline
    const deadline = Date.now() + ms;
    let h: NodeJS.Timeout;
    const arm = (left: number): void => {
      h = setTimeout(
        () => {
          const rest = deadline - Date.now();
          if (rest > 0 && left > MAX_TIMER_MS) arm(rest);
          else fn();
        },
        Math.min(left, MAX_TIMER_MS),
      );
    };
    arm(ms);
    return { cancel: () => clearTimeout(h) };
  },
};
