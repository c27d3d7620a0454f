import type { TaskRecord } from '../../generated';
import { ValidationError, errorMeta } from '../../errors';
import type { Logger } from '../../lib/logger';
import { parseTaskBulk } from '../../lib/validate';
import type { QueueReceiver, QueueSender } from '../../transport/queue';

/**
 * The loop every task component runs: decode, validate at the boundary, call one handler.
 * A malformed message is logged with what was wrong (and any task uids it names); it never
 * stops the loop.
 */
export async function consumeTaskBulks(
  receiver: QueueReceiver,
  handle: (tasks: TaskRecord[]) => void,
  log: Logger,
): Promise<void> {
  for await (const msg of receiver.messages()) {
    if (!msg.ok) {
      log.error('undecodable message rejected', errorMeta(msg.error));
      continue;
    }
    let tasks: TaskRecord[];
    try {
      tasks = parseTaskBulk(msg.value);
    } catch (e) {
      const issues = e instanceof ValidationError ? e.issues : [];
      log.error('invalid task bulk rejected', { issues, uids: uidsIn(msg.value) });
      continue;
    }
    try {
      handle(tasks);
    } catch (e) {
      log.error('handler failed on a task bulk', {
        ...errorMeta(e),
        uids: tasks.map((t) => t.uid),
      });
    }
  }
}

function uidsIn(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  return value
    .map((v) => (v !== null && typeof v === 'object' ? (v as { uid?: unknown }).uid : undefined))
    .filter((u): u is string => typeof u === 'string');
}

/** Fire-and-forget send whose failure is logged, never thrown into a decision core. */
export function sendLogged(sender: QueueSender, value: unknown, log: Logger, what: string): void {
  sender.send(value).catch((e: unknown) => log.error(`${what}: send failed`, errorMeta(e)));
}
