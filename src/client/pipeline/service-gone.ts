import { errorMeta } from '../../errors';
import type { Logger } from '../../lib/logger';
import type { ServiceEnd } from '../../components/shared/service-ends';
import type { ControlBus } from '../../transport/control-bus';

/**
 * Tells every agent that a ready service's attempt stopped serving (service_gone): each
 * withdraws the tasks it let go that have not started there, wherever the service ran.
 */
export function toEveryAgent(
  control: ControlBus,
  log: Logger,
): (uid: string, end: ServiceEnd) => void {
  return (uid, end) =>
    void control
      .publish({ type: 'service_gone', uid, attempt: end.attempt, retry: end.retry })
      .catch((e: unknown) => log.warn('service_gone not sent', { uid, ...errorMeta(e) }));
}
