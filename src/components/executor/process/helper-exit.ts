import { errnoText } from '../../../lib/errno-text';
import { cutToLine } from '../../../lib/file-tail';
import type { ExitedEvent } from '../effects';
import type { HelperEvent } from './helper/protocol';
import type { OomKills } from './task-limiter';

/**
 * An exit as the SpawnerPool's handlers get it: a 'stream' spawn's tails decoded, cut as file
 * tails are, and `lost`, the stream file that frames of it were not written to and why (the
 * helper's lost event came before its exit); `oom`, what the OOM killer did in its cgroup.
 */
export function exitedOf(
  ev: Extract<HelperEvent, { ev: 'exited' }>,
  lost?: { file: string; errno: string },
  oom?: OomKills,
): ExitedEvent {
  const { uid, exitCode, signal, t } = ev;
  const exit: ExitedEvent = { uid, exitCode, signal, ...(t === undefined ? {} : { t }) };
  if (oom !== undefined) exit.oom = oom;
  const { stdoutTail, stderrTail, stdoutBytes, stderrBytes } = ev;
  if (stdoutTail === undefined || stderrTail === undefined) return exit;
  const text = (base64: string, bytes = 0): string => {
    const tail = Buffer.from(base64, 'base64');
    return cutToLine(tail.toString('utf8'), bytes > tail.length);
  };
  exit.output = {
    stdout: text(stdoutTail, stdoutBytes),
    stderr: text(stderrTail, stderrBytes),
    stdoutBytes: stdoutBytes ?? 0,
    stderrBytes: stderrBytes ?? 0,
  };
  if (ev.dropped !== undefined && ev.dropped > 0) exit.output.dropped = ev.dropped;
  if (lost !== undefined) {
    const why = errnoText(lost.errno, lost.errno);
    exit.output.lost = `cannot write the output stream '${lost.file}': ${why} (${lost.errno})`;
  }
  return exit;
}
