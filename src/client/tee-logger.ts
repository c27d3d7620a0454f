import type { Logger } from '../lib/logger';

/** Sends every log line to both loggers (the session's file, and the user's if given). */
export function teeLogger(a: Logger, b: Logger): Logger {
  return {
    error: (m, meta) => (a.error(m, meta), b.error(m, meta)),
    warn: (m, meta) => (a.warn(m, meta), b.warn(m, meta)),
    info: (m, meta) => (a.info(m, meta), b.info(m, meta)),
    debug: (m, meta) => (a.debug(m, meta), b.debug(m, meta)),
    child: (meta) => teeLogger(a.child(meta), b.child(meta)),
  };
}
