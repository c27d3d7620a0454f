/** A view of the page: its element, and what stops its polls and streams when it is left. */
export interface View {
  readonly element: HTMLElement;
  close(): void;
}

/** Calls `fn` now and then every `ms` until the view closes; a call never overlaps the last. */
export function poll(
  ms: number,
  fn: (signal: AbortSignal) => Promise<void>,
  stop: AbortSignal,
): void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const run = async (): Promise<void> => {
    try {
      await fn(stop);
    } catch {
      // shown by fn itself; the next round tries again
    }
    if (!stop.aborted) timer = setTimeout(() => void run(), ms);
  };
  stop.addEventListener('abort', () => clearTimeout(timer), { once: true });
  void run();
}
