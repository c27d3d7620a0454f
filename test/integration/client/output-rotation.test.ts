/**
 * Stream files rotate: a spawner helper moves on to a new part at a quarter of its share of the
 * pilot's agent.outputDiskBytes and removes its oldest parts past its share. A follower
 * (tmgr.tail follow) reads across a rotation, losing and repeating no line; the pilot's stream
 * files stay within the bound. Each spawner helper (C and Node) does the same.
 */
import { expect, it } from '@jest/globals';
import { readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { withTimeout } from '../../../src/lib/deferred';
import { streamDirOf } from '../../../src/lib/stream-cursor';
import { closedGate } from '../../support/flock-gate';
import { fixtures } from '../../support/session-fixture';
import { describeEachHelper, useHelperEnv } from '../components/executor/process/spawner-fixtures';
import { collect } from '../../support/tail-check';

const MIB = 1024 * 1024;
const seq = (from: number, to: number): string[] =>
  Array.from({ length: to - from + 1 }, (_, i) => String(from + i));

describeEachHelper('stream file rotation', (helper) => {
  useHelperEnv(helper);
  const fx = fixtures();

  it('a follower reads across a rotation, every line once, and the files stay within the pilot bound', async () => {
    // one helper: its share is the whole MiB, a new part every 256 KiB
    const { tmgr, pilot, dir } = await fx.open({
      cores: 1,
      agent: { spawners: 1, outputDiskBytes: MIB },
    });
    const gateFile = path.join(dir, 'gate');
    const gate = await closedGate(gateFile);
    try {
      // ~290 KB before the gate (past the first part's 256 KiB), as much after it
      const [t] = await tmgr.submitTasks([
        {
          executable: '/bin/sh',
          arguments: ['-c', 'seq 1 50000; flock -s "$0" true; seq 50001 100000', gateFile],
        },
      ]);
      const lines = tmgr.tail(t!.uid, { follow: true });
      const got: string[] = [];
      // the first 50,000 come while the task waits at the gate: read live, across the rotation
      while (got.length < 50_000) {
        const r = await withTimeout(lines.next(), 30_000, `line ${got.length + 1}`);
        if (r.done === true) throw new Error('the follower ended early');
        got.push(r.value);
      }
      expect(t!.final).toBe(false);
      const streams = streamDirOf(pilot.sandbox);
      expect(readdirSync(streams).sort()).toEqual(['spawner.0.0-1.pfout', 'spawner.0.0.pfout']);
      await gate.open();
      got.push(...(await withTimeout(collect(lines), 30_000, 'the rest')));
      expect(got).toEqual(seq(1, 100_000));
      expect(t!.state).toBe('DONE');

      // 3 MB more: the oldest parts go, the files take at most the bound and one part more
      const [big] = await tmgr.submitTasks([
        { executable: '/bin/sh', arguments: ['-c', 'seq 1 400000'] },
      ]);
      await tmgr.waitTasks({ uids: [big!.uid], timeoutMs: 60_000 });
      const bytes = readdirSync(streams).reduce(
        (n, f) => n + statSync(path.join(streams, f)).size,
        0,
      );
      expect(bytes).toBeLessThanOrEqual(MIB + 256 * 1024 + 64 * 1024);
      expect(readdirSync(streams)).not.toContain('spawner.0.0.pfout');
      // what is left of its output is read in order, from where its oldest part left (perhaps
      // in a line) to its last line
      const tail = await collect(tmgr.tail(big!.uid));
      const first = Number(tail[1]);
      expect(tail.slice(1)).toEqual(seq(first, 400_000));
    } finally {
      gate.remove();
    }
  }, 120_000);
});
