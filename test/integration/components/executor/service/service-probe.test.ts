import { afterEach, describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as path from 'node:path';
import {
  freePort,
  ReadinessProbe,
} from '../../../../../src/components/executor/service/service-probe';
import type { ReadyChecks } from '../../../../../src/components/executor/effects';
import { systemClock } from '../../../../../src/lib/clock';
import { tempDirs } from '../../../../support/temp-dirs';

/** The probe's checks against real files and sockets. */
describe('ReadinessProbe', () => {
  const temp = tempDirs('pf-probe-');
  const cleanup: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanup.splice(0)) c();
  });

  /** A probe whose readiness is a promise; stopped after the test. */
  const probe = (checks: ReadyChecks, port?: number) => {
    const dir = temp.make();
    const out = path.join(dir, 'stdout');
    const err = path.join(dir, 'stderr');
    let ready!: () => void;
    const isReady = new Promise<void>((r) => (ready = r));
    let readyCount = 0;
    /** Resolved after the next round that left checks pending, with them. */
    let nextRound: ((pending: readonly string[]) => void)[] = [];
    const p = new ReadinessProbe(
      checks,
      { host: '127.0.0.1', outputs: [out, err], ...(port !== undefined ? { port } : {}) },
      systemClock,
      () => {
        readyCount++;
        ready();
      },
      (pending) => {
        const waiters = nextRound;
        nextRound = [];
        for (const w of waiters) w(pending);
      },
    );
    cleanup.push(() => p.stop());
    /** What is still pending after two whole rounds from now (the first may be under way). */
    const pendingAfterRounds = async (): Promise<readonly string[]> => {
      await new Promise((r) => nextRound.push(r));
      return new Promise((r) => nextRound.push(r));
    };
    return { out, err, isReady, count: () => readyCount, pendingAfterRounds };
  };

  it('is ready once a line of stdout or stderr matches, written in pieces after it started', async () => {
    const { out, err, isReady, count, pendingAfterRounds } = probe({
      pattern: 'listening on \\d+',
    });
    fs.writeFileSync(out, 'starting\nlisten');
    expect(await pendingAfterRounds()).toEqual(['pattern']);
    fs.writeFileSync(err, 'a warning\n');
    fs.appendFileSync(out, 'ing on 8080\n');
    await isReady;
    expect(count()).toBe(1);
  }, 10_000);

  it('is ready on HTTP 2xx, not on a connection alone nor on a 503', async () => {
    let healthy = false;
    const server = http.createServer((req, res) => {
      res.writeHead(req.url === '/health' && healthy ? 204 : 503);
      res.end();
    });
    const port = await freePort();
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    cleanup.push(() => server.close());
    const { isReady, pendingAfterRounds } = probe({ http: '/health' }, port);
    expect(await pendingAfterRounds()).toEqual(['http']);
    healthy = true;
    await isReady;
  }, 10_000);

  it('waits for every check: a TCP port that opens later and a line', async () => {
    const port = await freePort();
    const { out, isReady, pendingAfterRounds } = probe({ tcp: true, pattern: '^ready$' }, port);
    fs.writeFileSync(out, 'ready\n');
    expect(await pendingAfterRounds()).toEqual(['tcp']);
    const server = net.createServer((s) => s.destroy());
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    cleanup.push(() => server.close());
    await isReady;
  }, 10_000);

  it('is ready at once with no check', async () => {
    await probe({}).isReady;
  });

  it('gives ports that can be bound', async () => {
    const port = await freePort();
    const server = net.createServer();
    await new Promise<void>((r, j) => server.once('error', j).listen(port, r));
    server.close();
  });
});
