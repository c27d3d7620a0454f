import type { Explanation } from '../../src/client/tasks/explain';
import { runtimeOf } from '../../src/client/runtime/runtime';
import { deferred, withTimeout } from '../../src/lib/deferred';
import type { Fixture } from './session-fixture';

/**
 * Resolves with the task's explanation once `pred` holds: checked now, then at each state the
 * client delivers and at each waiting report an agent sends (the two may come in either order).
 */
export function explained(
  fx: Pick<Fixture, 'tmgr' | 'session'>,
  uid: string,
  pred: (e: Explanation) => boolean,
  timeoutMs = 20_000,
): Promise<Explanation> {
  const seen = deferred<Explanation>();
  const check = (): void => {
    const e = fx.tmgr.explain(uid);
    if (pred(e)) seen.resolve(e);
  };
  const offState = fx.tmgr.onState(check);
  const offBus = runtimeOf(fx.session).control.on((m) => {
    if (m.type === 'agent_waits') check();
  });
  check();
  const last = (): string => JSON.stringify(fx.tmgr.explain(uid));
  return withTimeout(seen.promise, timeoutMs, `explanation of ${uid}`)
    .catch((e: unknown) => {
      throw new Error(`${String(e)}; last: ${last()}`);
    })
    .finally(() => {
      offState();
      offBus();
    });
}
