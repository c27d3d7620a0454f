import * as path from 'node:path';
import winston from 'winston';
import type { Logger } from './logger';

/** One JSON-lines log file per process in `dir` (agent, client session). */
export function fileLogger(
  dir: string,
  service: string,
  level = 'info',
): Logger & { close(): Promise<void> } {
  const transport = new winston.transports.File({ filename: path.join(dir, `${service}.log`) });
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
  return Object.assign(log as unknown as Logger, {
    close: () =>
      new Promise<void>((resolve) => {
        transport.on('finish', () => resolve());
        log.end();
      }),
  });
}
