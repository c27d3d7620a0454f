import * as path from 'node:path';
import winston from 'winston';
import type { Logger } from './logger';
import { PRIVATE_FILE } from './private-files';

/** One JSON-lines log file per process in `dir` (agent, client session). */
export function fileLogger(
  dir: string,
  service: string,
  level = 'info',
): Logger & { close(): Promise<void> } {
  const transport = new winston.transports.File({
    filename: path.join(dir, `${service}.log`),
    options: { flags: 'a', mode: PRIVATE_FILE },
  });
  const log = winston.createLogger({
    level,
    format: winston.format.combine(
      winston.format.timestamp(),
      winston.format.errors({ stack: true }),
      winston.format.json(),
    ),
    defaultMeta: { service },
    transports: [transport],
  });
  return Object.assign(leveled(log as unknown as Logger, level), {
    close: () =>
      new Promise<void>((resolve) => {
        transport.on('finish', () => resolve());
        log.end();
      }),
  });
}

/**
 * A winston logger still pushes a record below its level through its stream before dropping
 * it; per-bulk debug calls on the hot path cost a few percent of the agent that way. Below
 * 'debug', debug() (and that of every child) does nothing at all.
 */
function leveled(log: Logger, level: string): Logger {
  if (level === 'debug') return log;
  return {
    error: (m, meta) => log.error(m, meta),
    warn: (m, meta) => log.warn(m, meta),
    info: (m, meta) => log.info(m, meta),
    debug: () => undefined,
    child: (meta) => leveled(log.child(meta), level),
  };
}
