/**
 * The Node spawner helper's link to its master (main.ts): stdin and stdout, and with `--keep
 * PATH --keep-ms N` the Unix socket through which another master re-attaches once that one is
 * lost. pf-spawner.c does the same (its "Keep mode" section): keep the two in step. Node
 * built-ins only: the helper starts fast.
 *
 * Without keep, the end of stdin stops the helper (its events still go to stdout), and a failed
 * write of stdout stops it with nothing more written. With keep, either detaches it instead: the
 * text that did not reach the master (a failed write's whole text, then all written since) is
 * held, and PATH listens (0600, a stale socket removed first) until a master connects, which gets
 * a ready event marked `reattached`, then the held text, and speaks the protocol from then on;
 * or until N ms have passed: then it stops as without keep. The socket listens only while no
 * master is attached, so a second one is refused.
 */
import { unlinkSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';

export interface KeepArgs {
  path: string;
  ms: number;
}

/** The longest socket path Linux takes, in bytes (sun_path less its NUL). */
export const MAX_SOCKET_PATH = 107;

/**
 * `--keep PATH --keep-ms N` from their values (undefined: not given): both or neither, N a whole
 * number of ms, PATH short enough for a socket; else what is wrong.
 */
export function keepArgs(
  path: string | undefined,
  ms: string | undefined,
): { keep?: KeepArgs; error?: string } {
  if (path === undefined && ms === undefined) return {};
  const n = Number(ms);
  if (path === undefined || path === '' || ms === undefined || !Number.isSafeInteger(n) || n < 0) {
    return { error: '--keep PATH and --keep-ms N (a whole number of ms) go together' };
  }
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH) {
    return { error: `--keep '${path}': a socket path must be shorter than 108 bytes` };
  }
  return { keep: { path, ms: n } };
}

export interface LinkHandlers {
  /** The whole request lines of one chunk read from the master. */
  lines(lines: string[]): void;
  /** No master will come (no keep, or none in time): stop as at stdin EOF. Called again, too. */
  gone(): void;
  /** The ready event, sent (marked reattached) to each master that connects. */
  ready(): object;
  /** Said in an error event. */
  error(message: string): void;
}

export class MasterLink {
  /** Still on stdin and stdout (false from the first loss on). */
  private stdio = true;
  private socket: Socket | undefined;
  private attached = true;
  private server: Server | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Text whose write to the last master failed, in order; then what came while detached. */
  private failed: string[] = [];
  private held: string[] = [];
  private stopped = false;
  /** The start of a line whose end has not come yet. */
  private pending = '';
  /** Nothing written can reach a master any more: emit nothing. */
  broken = false;

  constructor(
    private readonly keep: KeepArgs | undefined,
    private readonly on: LinkHandlers,
  ) {
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (chunk: string) => this.feed(chunk));
    process.stdin.on('end', () => this.stdio && this.lost(false));
    process.stdin.on('error', () => this.stdio && this.lost(false));
    process.stdout.on('error', () => this.stdio && this.lost(true));
    if (keep !== undefined) process.stderr.on('error', () => undefined); // its reader may die
  }

  write(text: string): void {
    if (this.broken) return;
    if (!this.attached) {
      this.held.push(text);
      return;
    }
    const out = this.socket ?? process.stdout;
    out.write(text, (e) => {
      if (e != null && this.keep !== undefined && !this.stopped) this.failed.push(text);
    });
  }

  /** The helper stops: no master is waited for any more, and stdin is let go. */
  stop(): void {
    this.stopped = true;
    this.closeServer();
    if (this.stdio) process.stdin.destroy();
  }

  /** The helper's last events are written: its connection must not keep it alive. */
  finish(): void {
    this.socket?.unref(); // the pending writes still complete; the exit closes it
  }

  private feed(chunk: string): void {
    const lines = (this.pending + chunk).split('\n');
    this.pending = lines.pop() ?? '';
    this.on.lines(lines);
  }

  /** `output`: a write failed (else the input ended). */
  private lost(output: boolean): void {
    if (this.keep === undefined || this.stopped) {
      if (output) this.broken = true;
      this.on.gone();
      return;
    }
    if (!this.attached) return;
    this.attached = false;
    this.pending = ''; // a line the lost master did not finish
    if (this.stdio) process.stdin.destroy();
    this.stdio = false;
    this.socket?.destroy();
    this.socket = undefined;
    this.listen(this.keep);
  }

  private listen({ path, ms }: KeepArgs): void {
    try {
      unlinkSync(path); // a stale socket of an earlier helper
    } catch {
      // none there
    }
    const server = createServer({ allowHalfOpen: true }, (s) => this.attach(s));
    server.on('error', (e) => {
      this.on.error(`cannot listen at the keep socket '${path}': ${e.message}`);
      this.on.gone();
    });
    const mask = process.umask(0o177); // 0600 from the start: Node binds inside listen()
    try {
      server.listen(path);
    } finally {
      process.umask(mask);
    }
    this.server = server;
    this.timer = setTimeout(() => this.on.gone(), ms);
  }

  private attach(s: Socket): void {
    if (this.attached || this.stopped) {
      s.destroy(); // one master at a time
      return;
    }
    this.closeServer();
    this.attached = true;
    this.socket = s;
    s.setEncoding('utf8');
    s.on('data', (chunk: string) => this.feed(chunk));
    s.on('end', () => this.socket === s && this.lost(false));
    s.on('error', () => this.socket === s && this.lost(true));
    s.on('close', () => this.socket === s && this.lost(true));
    const ready = JSON.stringify({ ...this.on.ready(), reattached: true }) + '\n';
    const text = [ready, ...this.failed, ...this.held].join('');
    this.failed = [];
    this.held = [];
    this.write(text);
  }

  private closeServer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.server === undefined) return;
    this.server.close(); // libuv removes the socket file
    this.server = undefined;
  }
}
