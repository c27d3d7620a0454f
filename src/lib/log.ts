import * as path from 'node:path';
import winston from 'winston';
import { LogFile, type LogFileFailure } from './log-file';
import type { Logger } from './logger';
import { PRIVATE_FILE } from './private-files';

/** Longest wait for the log's last lines at close (a write stuck in the kernel must not hold it). */
const CLOSE_WAIT_MS = 5_000;

export type { LogFileFailure } from './log-file';

/** A process's log file, and what its owner needs at the end. */
export type FileLogger = Logger & {
  /**
   * Writes what is buffered and closes the file; always resolves (within 5 s), whatever the
   * disk does. Log calls after it do nothing.
   */
  close(): Promise<void>;
  /** Lines the file could not take (a full disk): dropped, not written. */
  readonly dropped: number;
};

/**
 * One JSON-lines log file per process in `dir` (agent, client session). A disk that fails
 * (ENOSPC) costs lines, counted and reported to `onFailure` once per spell, never the process
 * or its shutdown (LogFile).
 */
export function fileLogger(
  dir: string,
  service: string,
  level = 'info',
  onFailure?: (f: LogFileFailure) => void,
): FileLogger {
  const file = new LogFile(path.join(dir, `${service}.log`), PRIVATE_FILE, onFailure);
  const log = winston.createLogger({
    level,
    format: winston.format.combine(
      winston.format.timestamp(),
      winston.format.errors({ stack: true }),
      winston.format.json(),
    ),
    defaultMeta: { service },
    transports: [new winston.transports.Stream({ stream: file })],
  });
  // LogFile never errors; a winston error (a write after end) must not end the process.
  log.on('error', () => undefined);
  const state = { open: true };
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= new Promise<void>((resolve) => {
      state.open = false;
      const timer = setTimeout(resolve, CLOSE_WAIT_MS);
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      log.once('finish', () => {
        file.once('finish', done);
        file.end();
      });
      log.end();
    });
    return closing;
  };
  const logger = Object.assign(guarded(log as unknown as Logger, level, state), { close });
  // a getter: Object.assign would copy its value once
  return Object.defineProperty(logger, 'dropped', { get: () => file.dropped }) as FileLogger;
}

/**
 * Log calls after close do nothing (winston would throw 'write after end'). And a winston
 * logger still pushes a record below its level through its stream before dropping it; per-bulk
 * debug calls on the hot path cost a few percent of the agent that way. Below 'debug', debug()
 * (and that of every child) does nothing at all.
 */
function guarded(log: Logger, level: string, state: { open: boolean }): Logger {
  const debug = level === 'debug';
  return {
    error: (m, meta) => state.open && log.error(m, meta),
    warn: (m, meta) => state.open && log.warn(m, meta),
    info: (m, meta) => state.open && log.info(m, meta),
    debug: (m, meta) => debug && state.open && log.debug(m, meta),
    child: (meta) => guarded(log.child(meta), level, state),
  };
}
