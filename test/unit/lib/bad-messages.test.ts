import { describe, expect, it } from '@jest/globals';
import { BadMessages } from '../../../src/lib/bad-messages';
import type { Logger } from '../../../src/lib/logger';
import { FakeClock } from '../../support/fake-clock';

function recordingLog(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const at =
    (level: string) =>
    (message: string, meta?: Record<string, unknown>): void => {
      lines.push(`${level} ${message} ${JSON.stringify(meta ?? {})}`);
    };
  const log: Logger = {
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    debug: at('debug'),
    child: () => log,
  };
  return { log, lines };
}

describe('BadMessages', () => {
  it('logs the first few of each kind per window, counts all, and then says how many it skipped', () => {
    const clock = new FakeClock();
    const { log, lines } = recordingLog();
    const bad = new BadMessages(log, clock, { perWindow: 3, windowMs: 1_000 });
    for (let i = 0; i < 1_000; i++) bad.report('garbage rejected', { i });
    bad.report('wrong session', { i: 0 });
    expect(lines).toEqual([
      'warn garbage rejected {"i":0,"total":1}',
      'warn garbage rejected {"i":1,"total":2}',
      'warn garbage rejected {"i":2,"total":3}',
      'warn wrong session {"i":0,"total":1}',
    ]);
    expect(bad.counts()).toEqual({ 'garbage rejected': 1_000, 'wrong session': 1 });
    clock.advance(999);
    bad.report('garbage rejected', { i: 1_000 });
    expect(lines).toHaveLength(4);
    clock.advance(1);
    bad.report('garbage rejected', { i: 1_001 });
    expect(lines.slice(4)).toEqual([
      'warn bad messages not logged {"kind":"garbage rejected","notLogged":998,"total":1002}',
      'warn garbage rejected {"i":1001,"total":1002}',
    ]);
  });
});
