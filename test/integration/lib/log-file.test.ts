import * as fs from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { withTimeout } from '../../../src/lib/deferred';
import { fileLogger, type LogFileFailure } from '../../../src/lib/log';
import { LogFile } from '../../../src/lib/log-file';
import { tmpfsPerTest, tmpfsUnavailable } from '../../support/tmpfs';

const title =
  tmpfsUnavailable === undefined
    ? 'log files on a full disk (a real tmpfs)'
    : `log files on a full disk (skipped: ${tmpfsUnavailable})`;
const d = tmpfsUnavailable === undefined ? describe : describe.skip;

/** Every line of a JSON-lines file, parsed (a torn line fails the test). */
function lines(file: string): Record<string, unknown>[] {
  const text = fs.readFileSync(file, 'utf8');
  expect(text.endsWith('\n')).toBe(true);
  return text
    .slice(0, -1)
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** Writes to a stream and resolves once the stream has handled it. */
const write = (file: LogFile, line: string): Promise<void> =>
  new Promise((resolve) => file.write(line, () => resolve()));

d(title, () => {
  const mount = tmpfsPerTest('256k');

  it('drops and counts the lines a full disk refuses, tells once, and still closes', async () => {
    const fsys = mount();
    const failures: LogFileFailure[] = [];
    const before = fileLogger(fsys.dir, 'client');
    before.info('before the disk filled', { n: 0 });
    await before.close();
    fsys.fill();
    const log = fileLogger(fsys.dir, 'client', 'info', (f) => failures.push(f));
    const padding = 'x'.repeat(200);
    for (let i = 1; i <= 500; i++) log.info('while full', { i, padding });
    await withTimeout(log.close(), 10_000, 'close of a logger on a full disk');
    expect(failures).toEqual([
      expect.objectContaining({ file: `${fsys.dir}/client.log`, errno: 'ENOSPC' }),
    ]);
    expect(log.dropped).toBeGreaterThan(0);
    const kept = lines(`${fsys.dir}/client.log`);
    expect(kept[0]).toMatchObject({ message: 'before the disk filled', service: 'client' });
    expect(kept.length + log.dropped).toBe(501);
    log.error('after close: ignored, not thrown');
  });

  it('writes again once space is back, first saying how many lines were dropped', async () => {
    const fsys = mount();
    const file = new LogFile(`${fsys.dir}/agent.log`, 0o600, undefined, 0);
    await write(file, '{"n":0}\n');
    fsys.fill();
    const big = JSON.stringify({ pad: 'y'.repeat(8_000) }) + '\n';
    for (let i = 0; i < 3; i++) await write(file, big);
    expect(file.dropped).toBe(3);
    fsys.free();
    await write(file, '{"n":1}\n');
    await new Promise<void>((resolve) => file.end(resolve));
    expect(lines(`${fsys.dir}/agent.log`)).toEqual([
      { n: 0 },
      expect.objectContaining({ message: 'log lines dropped', dropped: 3, errno: 'ENOSPC' }),
      { n: 1 },
    ]);
  });
});
