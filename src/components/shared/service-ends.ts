import type { TaskRecord } from '../../generated';
import { retriesLeft, retryable } from './retry';

/** A service's attempt that was ready has ended: whether another attempt will follow it. */
export interface ServiceEnd {
  attempt: number;
  retry: boolean;
}

/**
 * How a ready service's attempt ended, from its record as the Executor let it go (exit code,
 * signal and reason set): undefined for any other task. `retry` foresees the
 * ManagerOutputStager's decision (retryable reason, retries left); a service stopped by a
 * cancel or its pilot's end, or that exited 0, ends DONE and is not retried.
 */
export function serviceEnd(t: TaskRecord): ServiceEnd | undefined {
  if (t.description.mode !== 'service' || t.endpoint === undefined) return undefined;
  const clean = t.exitCode === 0 && (t.signal ?? null) === null;
  const willRetry =
    t.stopped !== true &&
    t.canceled !== true &&
    !clean &&
    retriesLeft(t) > 0 &&
    (t.reason === undefined || retryable(t.reason));
  return { attempt: t.attempt, retry: willRetry };
}

/**
 * The ended service attempt that let `task` go (`readyOf`), if one has: the task must not start
 * with its endpoint. `endedOf` gives the latest ended attempt of a service.
 */
export function deadServiceOf(
  task: TaskRecord,
  endedOf: (service: string) => number | undefined,
): { service: string; attempt: number } | undefined {
  const of = task.readyOf;
  if (of === undefined) return undefined;
  for (const service in of) {
    const ended = endedOf(service);
    if (ended !== undefined && of[service]! <= ended) return { service, attempt: of[service]! };
  }
  return undefined;
}
