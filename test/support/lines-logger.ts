import type { Logger } from '../../src/lib/logger';

export type LoggedLine = [
  level: 'error' | 'warn' | 'info' | 'debug',
  message: string,
  meta: unknown,
];

/**
 * A Logger that keeps every line as `[level, message, meta]`, its children's too (in the same
 * list); `warned()` is the messages of its warnings, in order.
 */
export function linesLogger(): Logger & { lines: LoggedLine[]; warned: () => string[] } {
  const lines: LoggedLine[] = [];
  const at =
    (level: LoggedLine[0]) =>
    (message: string, meta?: Record<string, unknown>): void =>
      void lines.push([level, message, meta]);
  const log = {
    lines,
    warned: () => lines.filter((l) => l[0] === 'warn').map((l) => l[1]),
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    debug: at('debug'),
    child: () => log,
  };
  return log;
}
