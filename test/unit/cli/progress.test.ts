import { describe, expect, it, jest } from '@jest/globals';
import { PLAIN_EVERY_MS, plainLine, showProgress, type RunCounts } from '../../../src/cli/progress';

describe('run progress off a terminal', () => {
  it('a plain line names the counts and the rate', () => {
    const c: RunCounts = { total: 1000, done: 118, failed: 2, canceled: 0, running: 8 };
    expect(plainLine(c, 35.14)).toBe(
      'pilotfish: 120/1000 tasks ended (DONE 118, FAILED 2), 8 running, 35.1 tasks/s',
    );
  });

  it('writes a line every PLAIN_EVERY_MS when the counts changed, none after stop', async () => {
    jest.useFakeTimers();
    try {
      const written: string[] = [];
      const out = { isTTY: false, write: (s: string) => written.push(s) };
      const c: RunCounts = { total: 10, done: 0, failed: 0, canceled: 0, running: 2 };
      let t = 0;
      const view = showProgress(
        () => c,
        out as unknown as NodeJS.WriteStream,
        () => t,
      );
      t = PLAIN_EVERY_MS - 1;
      await jest.advanceTimersByTimeAsync(PLAIN_EVERY_MS - 1);
      expect(written).toEqual([]);
      c.done = 5;
      t += 1;
      await jest.advanceTimersByTimeAsync(1);
      expect(written).toEqual(['pilotfish: 5/10 tasks ended (DONE 5), 2 running, 0.2 tasks/s\n']);
      t += PLAIN_EVERY_MS;
      await jest.advanceTimersByTimeAsync(PLAIN_EVERY_MS); // the same counts: no line
      expect(written).toHaveLength(1);
      c.running = 1;
      t += PLAIN_EVERY_MS;
      await jest.advanceTimersByTimeAsync(PLAIN_EVERY_MS);
      expect(written).toHaveLength(2);
      view.stop();
      c.done = 10;
      await jest.advanceTimersByTimeAsync(10 * PLAIN_EVERY_MS);
      expect(written).toHaveLength(2);
      expect(written.join('')).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f]/); // eslint-disable-line no-control-regex
    } finally {
      jest.useRealTimers();
    }
  });
});
