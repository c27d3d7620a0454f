/**
 * CallOutputFile on a real directory: what calls printed framed into functions.pfout (read back
 * by StreamLines, as tmgr.tail reads it), tails for their exits, rotation within its share, and
 * a file that cannot be made (the output lost, said on the exits).
 */
import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ExitedEvent } from '../../../../../src/components/executor/effects';
import {
  CallOutputFile,
  FUNCTION_STREAM_FILE,
} from '../../../../../src/components/executor/functions/call-output-file';
import { silentLogger } from '../../../../../src/lib/logger';
import { StreamLines } from '../../../../../src/lib/stream-lines';
import { tempDirs } from '../../../../support/temp-dirs';

const exit = (uid: string): ExitedEvent => ({ uid, exitCode: 0, signal: null });
const bytes = (s: string): Uint8Array => Buffer.from(s);

async function linesOf(dir: string, uid: string, attempt: number, stream: 'stdout' | 'stderr') {
  const r = new StreamLines(dir, uid, attempt, stream);
  const out: string[] = [];
  try {
    do out.push(...(await r.read()));
    while (await r.more());
    const rest = r.rest();
    if (rest !== undefined) out.push(rest);
    return { lines: out, complete: r.complete };
  } finally {
    await r.close();
  }
}

describe('CallOutputFile', () => {
  const temp = tempDirs('pf-cof-');

  it("frames each call's output under its uid and attempt, and gives its exit the tails", async () => {
    const dir = temp.make();
    const f = new CallOutputFile({ dir, logger: silentLogger });
    const a1 = exit('a');
    const b = exit('b');
    f.take([
      { uid: 'a', printed: { attempt: 1, stdout: bytes('old\n') }, exit: a1 },
      { uid: 'b', printed: { attempt: 1, stderr: bytes('b err\npartial') }, exit: b },
    ]);
    const a2 = exit('a');
    const long = 'x'.repeat(100_000); // more than a frame holds
    f.take([
      {
        uid: 'a',
        printed: { attempt: 2, stdout: bytes(`new 1\n${long}\nnew 3\n`), dropped: 5 },
        exit: a2,
      },
    ]);
    f.close();
    expect(fs.readdirSync(dir)).toEqual([FUNCTION_STREAM_FILE]);
    expect(await linesOf(dir, 'a', 2, 'stdout')).toEqual({
      lines: ['new 1', long, 'new 3'],
      complete: true,
    });
    expect((await linesOf(dir, 'a', 1, 'stdout')).lines).toEqual(['old']);
    expect(await linesOf(dir, 'b', 1, 'stderr')).toEqual({
      lines: ['b err', 'partial'],
      complete: true,
    });
    expect((await linesOf(dir, 'b', 1, 'stdout')).lines).toEqual([]);
    expect(b.output).toEqual({
      stdout: '',
      stderr: 'b err\npartial',
      stdoutBytes: 0,
      stderrBytes: 13,
    });
    // the tail: the last 2,048 bytes from a line's start
    expect(a2.output).toEqual({
      stdout: 'new 3\n',
      stderr: '',
      stdoutBytes: 6 + 100_001 + 6,
      stderrBytes: 0,
      dropped: 5,
    });
  });

  it('moves on to a new part within its share', () => {
    const dir = temp.make();
    const f = new CallOutputFile({ dir, logger: silentLogger, rotateBytes: 100, keepBytes: 400 });
    for (let i = 0; i < 10; i++) {
      f.take([
        {
          uid: `c${i}`,
          printed: { attempt: 1, stdout: bytes('y'.repeat(200)) },
          exit: exit(`c${i}`),
        },
      ]);
    }
    f.close();
    const parts = fs.readdirSync(dir).sort();
    expect(parts).not.toContain(FUNCTION_STREAM_FILE); // the oldest parts went
    const total = parts.reduce((n, p) => n + fs.statSync(path.join(dir, p)).size, 0);
    expect(total).toBeLessThanOrEqual(400);
    expect(parts.every((p) => /^functions-\d+\.pfout$/.test(p))).toBe(true);
  });

  it('says on each exit that the output was lost when its file cannot be made', () => {
    const dir = path.join(temp.make(), 'missing');
    const f = new CallOutputFile({ dir, logger: silentLogger });
    const e = exit('a');
    f.take([{ uid: 'a', printed: { attempt: 1, stdout: bytes('hi\n') }, exit: e }]);
    expect(e.output).toMatchObject({ stdout: 'hi\n', stdoutBytes: 3 });
    expect(e.output?.lost).toBe(
      `cannot open the output stream '${path.join(dir, FUNCTION_STREAM_FILE)}': no such file or directory (ENOENT)`,
    );
  });
});
