import * as fs from 'node:fs/promises';
import * as http from 'node:http';
import * as net from 'node:net';
import type { Clock, Timer } from '../../../lib/clock';
import type { ReadyChecks } from '../effects';

/**
 * How often the checks run: a tenth of the time since the start, from 10 ms to 500 ms. A
 * service is seen ready within about a tenth of its start-up time (a model that loads in
 * 300 ms, within 30 ms; one of a minute, within 500 ms), at a few dozen checks in its first
 * seconds.
 */
export function probeIntervalMs(sinceStartMs: number): number {
  return Math.min(MAX_INTERVAL_MS, Math.max(MIN_INTERVAL_MS, Math.round(sinceStartMs / 10)));
}
const MIN_INTERVAL_MS = 10;
const MAX_INTERVAL_MS = 500;
/** One connect or request: a service that accepts but does not answer is not ready. */
const ATTEMPT_TIMEOUT_MS = 2_000;
/** A line longer than this is matched by its first part only. */
const MAX_LINE = 64 * 1024;

export interface ProbeTarget {
  host: string;
  port?: number;
  /** The files the service's stdout and stderr go to (pattern checks read them). */
  outputs: readonly string[];
}

/**
 * Runs a service's ready checks until every one has passed once, then calls `ready`: a line of
 * its output matching the pattern (read as the files grow, by offset), a TCP connect, an HTTP
 * GET answered 2xx. The checks poll: a service says nothing when it is ready, and its output
 * may be on a file system that tells no one when it grows.
 */
export class ReadinessProbe {
  private readonly pending = new Set<'pattern' | 'tcp' | 'http'>();
  private readonly regex: RegExp | undefined;
  private readonly files: { path: string; offset: number; rest: string }[];
  private readonly startedAt: number;
  private timer: Timer | undefined;
  private busy = false;
  private stopped = false;

  constructor(
    private readonly checks: ReadyChecks,
    private readonly target: ProbeTarget,
    private readonly clock: Clock,
    private readonly ready: () => void,
    /** After each round that left checks pending: which (for logs, and tests). */
    private readonly waiting?: (pending: readonly string[]) => void,
  ) {
    if (checks.pattern !== undefined) {
      this.pending.add('pattern');
      this.regex = new RegExp(checks.pattern);
    }
    if (checks.tcp === true) this.pending.add('tcp');
    if (checks.http !== undefined) this.pending.add('http');
    this.files = target.outputs.map((path) => ({ path, offset: 0, rest: '' }));
    this.startedAt = clock.now();
    this.schedule(0);
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = this.clock.setTimeout(() => void this.round(), ms);
  }

  private async round(): Promise<void> {
    if (this.stopped || this.busy) return;
    this.busy = true;
    try {
      const checks = [...this.pending].map(async (c) => {
        if (await this.check(c)) this.pending.delete(c);
      });
      await Promise.all(checks);
    } finally {
      this.busy = false;
    }
    if (this.stopped) return;
    if (this.pending.size === 0) {
      this.stopped = true;
      this.ready();
      return;
    }
    this.waiting?.([...this.pending]);
    this.schedule(probeIntervalMs(this.clock.now() - this.startedAt));
  }

  private check(c: 'pattern' | 'tcp' | 'http'): Promise<boolean> {
    const { host, port } = this.target;
    switch (c) {
      case 'pattern':
        return this.readLines();
      case 'tcp':
        return port === undefined ? Promise.resolve(false) : tcpAccepts(host, port);
      case 'http':
        return port === undefined ? Promise.resolve(false) : httpOk(host, port, this.checks.http!);
    }
  }

  /** Reads what the outputs gained since the last round; true once a line matches. */
  private async readLines(): Promise<boolean> {
    let matched = false;
    for (const f of this.files) {
      let chunk: string;
      try {
        const h = await fs.open(f.path, 'r');
        try {
          const { size } = await h.stat();
          if (size <= f.offset) continue;
          const buf = Buffer.alloc(Math.min(size - f.offset, 1 << 20));
          const { bytesRead } = await h.read(buf, 0, buf.length, f.offset);
          f.offset += bytesRead;
          chunk = buf.toString('utf8', 0, bytesRead);
        } finally {
          await h.close();
        }
      } catch {
        continue; // not created yet
      }
      const lines = (f.rest + chunk).split('\n');
      f.rest = lines.pop()!.slice(0, MAX_LINE);
      // the unfinished last line counts too: a prompt may never end its line
      if (lines.some((l) => this.regex!.test(l)) || this.regex!.test(f.rest)) matched = true;
    }
    return matched;
  }
}

/** Whether a TCP connection to host:port is accepted within `timeoutMs`. */
export function tcpAccepts(
  host: string,
  port: number,
  timeoutMs = ATTEMPT_TIMEOUT_MS,
): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Whether a GET of `path` on host:port answers 2xx within `timeoutMs` (a hung server does not). */
export function httpOk(
  host: string,
  port: number,
  path: string,
  timeoutMs = ATTEMPT_TIMEOUT_MS,
): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean): void => {
      clearTimeout(timer);
      resolve(ok);
    };
    // the whole request, answer included: a server that accepts and never answers is dead
    const timer = setTimeout(() => req.destroy(), timeoutMs);
    const req = http.get({ host, port, path, agent: false, timeout: timeoutMs }, (res) => {
      res.resume();
      const code = res.statusCode ?? 0;
      done(code >= 200 && code < 300);
    });
    req.once('timeout', () => req.destroy());
    req.once('error', () => done(false));
  });
}

/** A TCP port free on this node now (the kernel's pick), for a service's port 'auto'. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, () => {
      const addr = server.address();
      server.close(() =>
        typeof addr === 'object' && addr !== null
          ? resolve(addr.port)
          : reject(new Error('the kernel gave no port')),
      );
    });
  });
}
