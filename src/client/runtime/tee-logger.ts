import type { Logger } from '../../lib/logger';

type Level = 'error' | 'warn' | 'info' | 'debug';

/**
 * Sends every log line to both loggers (the session's file, and the user's if given). A logger
 * that throws (the user's, writing to a full disk) costs its line, never the caller's work.
 */
export function teeLogger(a: Logger, b: Logger): Logger {
  const both =
    (level: Level) =>
    (m: string, meta?: Record<string, unknown>): void => {
      quietly(() => a[level](m, meta));
      quietly(() => b[level](m, meta));
    };
  return {
    error: both('error'),
    warn: both('warn'),
    info: both('info'),
    debug: both('debug'),
    child: (meta) => teeLogger(a.child(meta), b.child(meta)),
  };
}

function quietly(fn: () => void): void {
  try {
    fn();
  } catch {
    // nowhere left to say it: the line is lost, the work goes on
  }
}
