/**
 * Tasks per second through one queue: QueueSender -> Bridge.queue() -> QueueReceiver, all in
 * this process on loopback tcp (the bridge forwards on the event loop, as in the client and the
 * agent). Task records are agent-shaped (`AGENT_SCHEDULING_PENDING`, a `/bin/true`
 * description) and go as bulks, i.e. arrays of records, each msgpackr-encoded by the sender and
 * decoded by the receiver; the clock runs from the first send to the last task decoded.
 *
 * - `bulk100_tasks_per_s`: tasks/s in bulks of 100 tasks (how the pipeline moves tasks).
 * - `single_msgs_per_s`: messages/s (= tasks/s) in bulks of 1, the cost of a message.
 *
 * Each figure is the median of several runs after a warm-up run; `min`/`max` give the spread.
 */
import type { TaskRecord } from '../src/generated';
import { Bridge } from '../src/transport/bridge';
import { QueueReceiver, QueueSender } from '../src/transport/queue';
import type { Decoded } from '../src/transport/frames';
import { median, nowNs, secondsBetween, sig, type BenchOptions } from './harness';

export const name = 'transport';
export const description =
  'tasks/s through one queue bridge (sender -> bridge -> receiver, msgpackr, loopback tcp) ' +
  'in bulks of 100 and of 1';

interface Case {
  metric: string;
  bulk: number;
  tasks: number;
}

export async function run({ quick, emit }: BenchOptions): Promise<void> {
  const runs = quick ? 1 : 5;
  const cases: Case[] = [
    { metric: 'bulk100_tasks_per_s', bulk: 100, tasks: quick ? 2_000 : 500_000 },
    { metric: 'single_msgs_per_s', bulk: 1, tasks: quick ? 500 : 100_000 },
  ];
  const bridge = await Bridge.queue();
  const sender = new QueueSender(bridge.endpoints.in);
  const receiver = new QueueReceiver(bridge.endpoints.out);
  const incoming = receiver.messages();
  try {
    // warm-up: connections established, code paths compiled
    await pass(sender, incoming, bulksOf(makeTasks(quick ? 200 : 20_000), 100));
    await pass(sender, incoming, bulksOf(makeTasks(quick ? 50 : 5_000), 1));
    for (const c of cases) {
      const bulks = bulksOf(makeTasks(c.tasks), c.bulk);
      const rates: number[] = [];
      for (let r = 0; r < runs; r++) {
        const seconds = await pass(sender, incoming, bulks);
        rates.push(c.tasks / seconds);
      }
      emit({
        metric: c.metric,
        value: sig(median(rates)),
        unit: '1/s',
        bulk: c.bulk,
        tasks: c.tasks,
        messages: bulks.length,
        runs,
        min: sig(Math.min(...rates)),
        max: sig(Math.max(...rates)),
      });
    }
  } finally {
    await incoming.return(undefined);
    await sender.close();
    receiver.close();
    await bridge.close();
  }
}

/** Sends every bulk and waits until all their tasks have come out; returns the seconds taken. */
async function pass(
  sender: QueueSender,
  incoming: AsyncGenerator<Decoded>,
  bulks: TaskRecord[][],
): Promise<number> {
  const expected = bulks.reduce((n, b) => n + b.length, 0);
  const start = nowNs();
  const sending = (async () => {
    for (const b of bulks) await sender.send(b);
  })();
  let got = 0;
  while (got < expected) {
    const next = await incoming.next();
    if (next.done === true) throw new Error(`queue closed after ${got} of ${expected} tasks`);
    if (!next.value.ok) throw next.value.error;
    const value = next.value.value;
    if (!Array.isArray(value)) throw new Error('received a message that is not a bulk');
    got += value.length;
  }
  const end = nowNs();
  await sending;
  return secondsBetween(start, end);
}

function makeTasks(n: number): TaskRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    uid: `task.${String(i).padStart(6, '0')}`,
    attempt: 1,
    state: 'AGENT_SCHEDULING_PENDING',
    session: 'bench.transport',
    pilot: 'pilot.0000',
    description: { executable: '/bin/true', arguments: [String(i)], coresPerRank: 1 },
  }));
}

function bulksOf<T>(xs: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += size) out.push(xs.slice(i, i + size));
  return out;
}
