/**
 * SIGINT and SIGTERM while a command works: the first calls `first(signal)` (stop cleanly), any
 * later one `again(signal)` (leave now). Returns how to give the signals back.
 */
export function onInterrupt(
  first: (signal: NodeJS.Signals) => void,
  again: (signal: NodeJS.Signals) => void,
): () => void {
  let seen = false;
  const handler = (signal: NodeJS.Signals): void => {
    if (seen) return again(signal);
    seen = true;
    first(signal);
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return () => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
}
