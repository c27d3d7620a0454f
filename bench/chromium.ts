import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Readable, Writable } from 'node:stream';

/** scripts/system-deps.sh, from bench/ under ts-jest or from dist/bench once built. */
function systemDeps(): string {
  for (const up of ['..', '../..']) {
    const p = path.resolve(__dirname, up, 'scripts/system-deps.sh');
    if (existsSync(p)) return p;
  }
  throw new Error(`scripts/system-deps.sh not found above ${__dirname}`);
}

/** Debian's Chromium (package chromium), its headless shell, or PILOTFISH_CHROMIUM. */
export function findChromium(): string | undefined {
  const candidates = [
    process.env.PILOTFISH_CHROMIUM,
    '/usr/lib/chromium/chromium',
    '/usr/lib/chromium/chromium-headless-shell',
    '/usr/bin/chromium-headless-shell',
    '/usr/bin/chromium',
  ];
  return candidates.find((c): c is string => c !== undefined && c !== '' && existsSync(c));
}

/**
 * The Chromium to test with: found, else installed by scripts/system-deps.sh (as root, with
 * Debian's packages reachable); undefined with the reason where neither works.
 */
export function chromiumOrWhy(): { path: string } | { why: string } {
  let found = findChromium();
  if (found === undefined) {
    const r = spawnSync('bash', [systemDeps()], {
      encoding: 'utf8',
    });
    found = findChromium();
    if (found === undefined) {
      return { why: `chromium is not installed and system-deps.sh could not: ${r.stderr.trim()}` };
    }
  }
  return { path: found };
}

type Message = {
  id?: number;
  method?: string;
  params?: unknown;
  result?: unknown;
  error?: unknown;
  sessionId?: string;
};

/**
 * A headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe:
 * JSON messages ended by NUL on fds 3 and 4), one page at a time. No network, no dependency.
 */
export class Browser {
  private nextId = 1;
  private readonly waiting = new Map<
    number,
    { resolve: (r: unknown) => void; reject: (e: Error) => void }
  >();
  private readonly listeners: ((m: Message) => void)[] = [];
  private buffer = '';
  private session = '';

  private constructor(
    private readonly child: ChildProcess,
    private readonly profileDir: string,
  ) {
    const out = child.stdio[4] as Readable;
    out.on('data', (d: Buffer) => this.receive(d.toString('utf8')));
    child.on('exit', () => {
      for (const w of this.waiting.values()) w.reject(new Error('chromium exited'));
      this.waiting.clear();
    });
  }

  static async launch(executable: string): Promise<Browser> {
    const profileDir = mkdtempSync(path.join(os.tmpdir(), 'pf-chromium-'));
    const child = spawn(
      executable,
      [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-dev-shm-usage',
        '--no-first-run',
        '--remote-debugging-pipe',
        `--user-data-dir=${profileDir}`,
        'about:blank',
      ],
      { stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'] },
    );
    const b = new Browser(child, profileDir);
    const { targetId } = (await b.send('Target.createTarget', { url: 'about:blank' })) as {
      targetId: string;
    };
    const { sessionId } = (await b.send('Target.attachToTarget', { targetId, flatten: true })) as {
      sessionId: string;
    };
    b.session = sessionId;
    await b.page('Page.enable');
    await b.page('Runtime.enable');
    return b;
  }

  private receive(text: string): void {
    this.buffer += text;
    let end;
    while ((end = this.buffer.indexOf('\0')) >= 0) {
      const m = JSON.parse(this.buffer.slice(0, end)) as Message;
      this.buffer = this.buffer.slice(end + 1);
      if (m.id !== undefined) {
        const w = this.waiting.get(m.id);
        this.waiting.delete(m.id);
        if (m.error !== undefined) w?.reject(new Error(JSON.stringify(m.error)));
        else w?.resolve(m.result);
      } else {
        for (const l of [...this.listeners]) l(m);
      }
    }
  }

  /** A command to the browser (no session) or, with `session`, to the page. */
  send(method: string, params: object = {}, session?: string): Promise<unknown> {
    const id = this.nextId++;
    const msg: Message = { id, method, params };
    if (session !== undefined) msg.sessionId = session;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      (this.child.stdio[3] as Writable).write(`${JSON.stringify(msg)}\0`);
    });
  }

  page(method: string, params: object = {}): Promise<unknown> {
    return this.send(method, params, this.session);
  }

  /** The next event named `method` of the page, or a rejection after `ms`. */
  event(method: string, ms = 60_000): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.listeners.splice(this.listeners.indexOf(on), 1);
        reject(new Error(`no ${method} within ${ms} ms`));
      }, ms);
      const on = (m: Message): void => {
        if (m.method !== method) return;
        clearTimeout(timer);
        this.listeners.splice(this.listeners.indexOf(on), 1);
        resolve(m.params);
      };
      this.listeners.push(on);
    });
  }

  async viewport(width: number, height: number): Promise<void> {
    await this.page('Emulation.setDeviceMetricsOverride', {
      width,
      height,
      deviceScaleFactor: 1,
      mobile: false,
    });
  }

  /** Loads a file and waits for its load event. */
  async open(file: string): Promise<void> {
    const loaded = this.event('Page.loadEventFired');
    await this.page('Page.navigate', { url: `file://${path.resolve(file)}` });
    await loaded;
  }

  /** The value of a JavaScript expression in the page (promises awaited). */
  async evaluate<T>(expression: string): Promise<T> {
    const r = (await this.page('Runtime.evaluate', {
      expression,
      returnByValue: true,
      awaitPromise: true,
    })) as {
      result: { value?: T };
      exceptionDetails?: { text: string; exception?: { description?: string } };
    };
    if (r.exceptionDetails !== undefined) {
      throw new Error(r.exceptionDetails.exception?.description ?? r.exceptionDetails.text);
    }
    return r.result.value as T;
  }

  /** Waits until an expression is truthy in the page, polling on the page's own frames. */
  async waitFor(expression: string, ms = 60_000): Promise<void> {
    await this.evaluate(`new Promise((resolve, reject) => {
      const end = performance.now() + ${ms};
      const poll = () => (${expression}) ? resolve(true)
        : performance.now() > end ? reject(new Error('timed out: ' + ${JSON.stringify(expression)}))
        : requestAnimationFrame(poll);
      poll();
    })`);
  }

  /** A real mouse move, as the user's pointer makes it. */
  async mouseMove(x: number, y: number): Promise<void> {
    await this.page('Input.dispatchMouseEvent', { type: 'mouseMoved', x, y });
  }

  async screenshot(): Promise<Buffer> {
    const r = (await this.page('Page.captureScreenshot', {
      format: 'png',
      captureBeyondViewport: true,
    })) as {
      data: string;
    };
    return Buffer.from(r.data, 'base64');
  }

  async close(): Promise<void> {
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.send('Browser.close').catch(() => undefined);
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(this.profileDir, { recursive: true, force: true });
  }
}
