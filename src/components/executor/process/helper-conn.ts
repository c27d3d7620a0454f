/**
 * How SpawnerPool reaches one spawner helper: the pipes of a helper it started (a child
 * process), or the keep socket of one a pool before it left running (SpawnerPool.attach; the
 * helper is not its child, so its death is the socket's 'close', not an 'exit').
 */
import { spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { TransportError, errorMeta } from '../../../errors';
import type { Logger } from '../../../lib/logger';

/** The pool's end of one helper. */
export interface HelperConn {
  /** The helper's pid where known before its ready event (a child process). */
  readonly pid: number | undefined;
  write(text: string): void;
  /** Ends the helper's stdin, as a pool without keep stops it (a socket: nothing, see close). */
  endInput(): void;
  /** SIGKILLs the helper (`pid`: from its ready event, for a helper that is not a child). */
  kill(pid: number): void;
  /** Lets go of the helper, which (keep mode) then waits for another master. */
  drop(): void;
}

export interface ConnEvents {
  data(chunk: string): void;
  stderr(text: string): void;
  /** The helper is gone: its process ended, or (attached) its socket closed; `how`, in words. */
  closed(how: string, code: number | null, signal: string | null): void;
}

/** Starts a helper process; its stdin takes the requests, its stdout gives the events. */
export function childConn(
  file: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  on: ConnEvents,
  log: Logger,
): HelperConn {
  const proc = spawn(file, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
  const pid = proc.pid ?? -1;
  proc.stdout.setEncoding('utf8');
  proc.stdout.on('data', (chunk: string) => on.data(chunk));
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (text: string) => on.stderr(text));
  // EPIPE once a helper died: 'close' below reports the death.
  proc.stdin.on('error', (e) => log.debug('spawner helper stdin error', errorMeta(e)));
  proc.on('error', (e) => log.error('spawner helper process error', { pid, ...errorMeta(e) }));
  proc.on('close', (code, signal) =>
    on.closed(signal !== null ? `killed by ${signal}` : `exit code ${code}`, code, signal),
  );
  return {
    pid: proc.pid,
    write: (text) => {
      if (!proc.stdin.writableEnded) proc.stdin.write(text);
    },
    endInput: () => proc.stdin.end(),
    kill: () => proc.kill('SIGKILL'),
    drop: () => proc.stdin.end(),
  };
}

/** Between tries to connect to a socket whose helper does not listen (yet). */
const RETRY_MS = 50;

/**
 * Connects to a helper's keep socket. It listens only while no master is attached, and only
 * once the helper has seen its master go, which may be a moment after the master died: so
 * ENOENT and ECONNREFUSED are tried again until `timeoutMs`, then reported naming the socket.
 */
export async function connectKeep(file: string, timeoutMs: number): Promise<Socket> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const tried = await new Promise<{ s: Socket } | NodeJS.ErrnoException>((resolve) => {
      const s = connect(file);
      s.once('connect', () => resolve({ s }));
      s.once('error', (e) => resolve(e));
    });
    if ('s' in tried) return tried.s;
    const again = tried.code === 'ENOENT' || tried.code === 'ECONNREFUSED';
    if (!again || Date.now() + RETRY_MS > deadline) {
      const why = again
        ? `no spawner helper listens there within ${timeoutMs} ms (none was left in keep mode, it is still attached to a master, or it ended)`
        : tried.message;
      throw new TransportError(
        `cannot reach the spawner helper at the keep socket '${file}': ${tried.code ?? 'error'}: ${why}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}

/** The pool's end of a helper reached through its keep socket (connectKeep). */
export function socketConn(s: Socket, file: string, on: ConnEvents, log: Logger): HelperConn {
  s.setEncoding('utf8');
  s.on('data', (chunk: string) => on.data(chunk));
  s.on('error', (e) => log.debug('spawner helper socket error', { file, ...errorMeta(e) }));
  s.on('close', () => on.closed(`its keep socket '${file}' closed`, null, null));
  return {
    pid: undefined,
    write: (text) => {
      if (!s.destroyed) s.write(text);
    },
    // Ending the socket would be the loss of this master, not the end of the helper: nothing.
    endInput: () => undefined,
    kill: (pid) => {
      try {
        process.kill(pid, 'SIGKILL');
      } catch (e) {
        log.warn('cannot kill a spawner helper', { pid, ...errorMeta(e) });
      }
      s.destroy();
    },
    drop: () => s.destroy(),
  };
}
