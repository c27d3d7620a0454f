import { Format, SingleBar } from 'cli-progress';
import type { Task } from '../client/task';

/** What a run's progress shows: its tasks by how far they got. */
export interface RunCounts {
  total: number;
  done: number;
  failed: number;
  canceled: number;
  /** In AGENT_EXECUTING now. */
  running: number;
}

/** A run's tasks by how far they got, now. */
export function countTasks(tasks: readonly Task[]): RunCounts {
  const c: RunCounts = { total: tasks.length, done: 0, failed: 0, canceled: 0, running: 0 };
  for (const t of tasks) {
    if (t.state === 'DONE') c.done++;
    else if (t.state === 'FAILED') c.failed++;
    else if (t.state === 'CANCELED') c.canceled++;
    else if (t.state === 'AGENT_EXECUTING') c.running++;
  }
  return c;
}

const ended = (c: RunCounts): number => c.done + c.failed + c.canceled;

/** How often a run that writes to a file (not a terminal) says how far it got. */
export const PLAIN_EVERY_MS = 30_000;
/** Redraws of the bar on a terminal: by time, whatever the task rate. */
const FPS = 8;

/** Shows a run's progress until `stop()` (which leaves the last state on a terminal). */
export interface ProgressView {
  stop(): void;
}

/**
 * On a terminal: a bar on one line, redrawn every 125 ms (cli-progress), coloured when the
 * terminal takes colours (NO_COLOR, FORCE_COLOR, TERM honoured). Otherwise plain lines, a line
 * every PLAIN_EVERY_MS when the counts changed, with no control characters, for a log file.
 * `count` is asked at each redraw; the rate counts the tasks ended since this call.
 */
export function showProgress(
  count: () => RunCounts,
  out: NodeJS.WriteStream,
  now: () => number = Date.now,
): ProgressView {
  const t0 = now();
  const ended0 = ended(count());
  const rate = (c: RunCounts): number => (ended(c) - ended0) / Math.max((now() - t0) / 1000, 1e-3);
  const elapsed = (): string => `${((now() - t0) / 1000).toFixed(0)} s`;
  if (out.isTTY) return barView(count, out, rate, elapsed);
  let last = '';
  const timer = setInterval(() => {
    const c = count();
    const key = JSON.stringify(c); // the counts, not the rate, which moves with the clock
    if (key !== last) out.write(`${plainLine(c, rate(c))}\n`);
    last = key;
  }, PLAIN_EVERY_MS);
  return { stop: () => clearInterval(timer) };
}

/** A plain progress line: `pilotfish: 120/1000 tasks ended (DONE 118, FAILED 2), 8 running, 35.1 tasks/s`. */
export function plainLine(c: RunCounts, rate: number): string {
  const states = [`DONE ${c.done}`];
  if (c.failed > 0) states.push(`FAILED ${c.failed}`);
  if (c.canceled > 0) states.push(`CANCELED ${c.canceled}`);
  return (
    `pilotfish: ${ended(c)}/${c.total} tasks ended (${states.join(', ')}), ` +
    `${c.running} running, ${rate.toFixed(1)} tasks/s`
  );
}

function barView(
  count: () => RunCounts,
  out: NodeJS.WriteStream,
  rate: (c: RunCounts) => number,
  elapsed: () => string,
): ProgressView {
  const colours = out.hasColors?.() ?? false;
  const paint = (code: number, s: string): string => (colours ? `\x1b[${code}m${s}\x1b[0m` : s);
  const bar = new SingleBar({
    stream: out,
    fps: FPS,
    barsize: 30,
    hideCursor: true,
    format: (options) => {
      const c = count();
      const parts = [
        `${Format.BarFormat(ended(c) / Math.max(c.total, 1), options)} ${ended(c)}/${c.total}`,
        paint(32, `done ${c.done}`),
      ];
      if (c.failed > 0) parts.push(paint(31, `failed ${c.failed}`));
      if (c.canceled > 0) parts.push(paint(33, `canceled ${c.canceled}`));
      parts.push(`running ${c.running}`, `${rate(c).toFixed(1)} tasks/s`, elapsed());
      return parts.join(' | ');
    },
  });
  // the bar's own timer redraws it every 1/FPS s, asking the counts then: not per task
  bar.start(1, 0);
  let stopped = false;
  return {
    stop: () => {
      if (stopped) return;
      stopped = true;
      bar.stop(); // draws once more, then a newline
    },
  };
}
