/**
 * Bounded output ('stream'): a task's output cap keeps its first and last halves around a
 * marker line and says how much was dropped (task.outputDropped), and the pilot's stream files
 * take no more disk than that; each spawner helper (C and Node) does the same.
 */
import { expect, it } from '@jest/globals';
import { readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { streamDirOf } from '../../../src/lib/stream-cursor';
import { fixtures } from '../../support/session-fixture';
import { describeEachHelper, useHelperEnv } from '../components/executor/process/spawner-fixtures';
import { collect } from '../../support/tail-check';

const GIB = 1024 * 1024 * 1024;
const CAP = 10 * 1024 * 1024;
const LINE = '0123456789abcdef'; // 17 bytes a line with its '\n'

/** Bytes of the files in `dir`. */
function bytesIn(dir: string): number {
  return readdirSync(dir).reduce((n, f) => n + statSync(path.join(dir, f)).size, 0);
}

describeEachHelper('an output cap', (helper) => {
  useHelperEnv(helper);
  const fx = fixtures();

  it('keeps the first and last parts of 1 GiB printed under a 10 MiB cap, says what it dropped, and the disk holds no more', async () => {
    const { tmgr, pilot } = await fx.open({ cores: 1 });
    const [t] = await tmgr.submitTasks([
      {
        executable: '/bin/sh',
        arguments: ['-c', `yes ${LINE} | head -c ${GIB}; echo; echo the end`],
        outputCapBytes: CAP,
      },
    ]);
    await tmgr.waitTasks({ timeoutMs: 120_000 });
    const printed = GIB + 1 + 'the end\n'.length;
    expect([t!.state, t!.exitCode]).toEqual(['DONE', 0]);
    expect(t!.outputDropped).toBe(printed - CAP);
    expect(t!.stdout).toMatch(/\nthe end\n$/); // the tail of the exit: its last lines
    expect(bytesIn(streamDirOf(pilot.sandbox))).toBeLessThan(CAP + 64 * 1024);

    const lines = await collect(tmgr.tail(t!.uid));
    const marker = lines.indexOf(`[pilotfish: ${printed - CAP} bytes dropped]`);
    expect(marker).toBeGreaterThan(0);
    const head = lines.slice(0, marker);
    const tail = lines.slice(marker + 1);
    // the head: whole lines, then the part of one where the first half of the cap ended
    expect(head.slice(0, -1).every((l) => l === LINE)).toBe(true);
    expect(LINE.startsWith(head.at(-1)!)).toBe(true);
    expect(head.join('\n').length).toBe(CAP / 2); // the marker's '\n' ended its last line
    // the tail: the rest of a line, whole lines, the last one cut by head -c, then the end
    expect(tail.at(-1)).toBe('the end');
    expect(LINE.startsWith(tail.at(-2)!)).toBe(true);
    expect(LINE.endsWith(tail[0]!)).toBe(true);
    expect(tail.slice(1, -2).every((l) => l === LINE)).toBe(true);
    expect(tail.join('\n').length + 1).toBe(CAP / 2);
  }, 180_000);
});
