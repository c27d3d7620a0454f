import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startCli, type LiveCli } from './cli';

/** `pilotfish serve` in a child process, on a free port of loopback. */
export interface LiveService {
  cli: LiveCli;
  url: string;
  /** The admin token its first start made. */
  token: string;
  session: string;
}

export async function startServe(dir: string, args: string[] = []): Promise<LiveService> {
  const cli = startCli(['serve', '--dir', dir, '--port', '0', ...args]);
  const m = await Promise.race([
    cli.stderrMatch(/serving session (\S+) at (\S+) \(API under \/v1/),
    cli.result.then((r) => {
      throw new Error(`pilotfish serve ended (${r.code ?? r.signal}): ${r.stderr}`);
    }),
  ]);
  const token = readFileSync(path.join(dir, 'admin.token'), 'utf8').trim();
  return { cli, url: m[2]!, token, session: m[1]! };
}

/** A service in a fresh directory of the temporary one (its name starts with `prefix`). */
export async function serveInTempDir(prefix: string): Promise<{ dir: string; s: LiveService }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, s: await startServe(dir) };
}

/** Stops the service (if it started) and removes its directory. */
export async function stopServe(
  s: LiveService | undefined,
  dir: string | undefined,
): Promise<void> {
  s?.cli.proc.kill('SIGTERM');
  await s?.cli.result;
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
}

/** One server-sent event. */
export interface SseEvent<T = Record<string, unknown>> {
  /** NaN for an event without an id (`end`). */
  id: number;
  event: string;
  data: T;
}

/**
 * Reads GET /v1/events (from `lastEventId`, as a reconnecting client says it) until `until`
 * says enough or the stream ends; resolves with what it read.
 */
export function readEvents(
  s: { url: string; token: string },
  opts: { lastEventId?: number; until(events: SseEvent[]): boolean; timeoutMs?: number },
): Promise<SseEvent[]> {
  return readSse(s, '/v1/events', opts);
}

/** Reads a server-sent event stream of the API (`route`), as readEvents does. */
export async function readSse<T = Record<string, unknown>>(
  s: { url: string; token: string },
  route: string,
  opts: { lastEventId?: number; until(events: SseEvent<T>[]): boolean; timeoutMs?: number },
): Promise<SseEvent<T>[]> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), opts.timeoutMs ?? 60_000);
  const events: SseEvent<T>[] = [];
  try {
    const res = await fetch(`${s.url}${route}`, {
      headers: {
        authorization: `Bearer ${s.token}`,
        ...(opts.lastEventId !== undefined ? { 'last-event-id': String(opts.lastEventId) } : {}),
      },
      signal: abort.signal,
    });
    if (res.status !== 200 || res.body === null) throw new Error(`GET ${route}: ${res.status}`);
    const decoder = new TextDecoder();
    let pending = '';
    for await (const chunk of res.body) {
      pending += decoder.decode(chunk as Uint8Array, { stream: true });
      const blocks = pending.split('\n\n');
      pending = blocks.pop()!;
      for (const block of blocks) {
        const ev = parseBlock<T>(block);
        if (ev !== undefined) events.push(ev);
      }
      if (opts.until(events)) break;
    }
    if (!opts.until(events)) throw new Error(`GET ${route} ended early: ${JSON.stringify(events)}`);
  } catch (e) {
    if (!abort.signal.aborted) throw e;
    throw new Error(
      `GET ${route}: no end in ${opts.timeoutMs ?? 60_000} ms (${events.length} events)`,
      { cause: e },
    );
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
  return events;
}

function parseBlock<T>(block: string): SseEvent<T> | undefined {
  let id: number | undefined;
  let event = 'message';
  let data = '';
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue;
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
    if (field === 'id') id = Number(value);
    else if (field === 'event') event = value;
    else if (field === 'data') data += value;
  }
  if (id === undefined && data === '') return undefined; // a comment block
  return { id: id ?? NaN, event, data: JSON.parse(data) as T };
}

/** A JSON request with the token; resolves with its status and parsed body. */
export async function api(
  s: { url: string; token?: string },
  method: string,
  route: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${s.url}${route}`, {
    method,
    headers: {
      ...(s.token !== undefined ? { authorization: `Bearer ${s.token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return {
    status: res.status,
    body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>),
  };
}

/** A self-signed certificate for 127.0.0.1 and its key, made by openssl into `dir`. */
export function selfSignedCert(dir: string): { cert: string; key: string } {
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  const args = ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert];
  args.push('-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1');
  execFileSync('openssl', args, { stdio: 'ignore', timeout: 60_000 });
  return { cert, key };
}

const FINAL = new Set(['DONE', 'FAILED', 'CANCELED']);

/** Task uid -> the final states the events tell of it (once each, when all is well). */
export function finalStates(events: readonly SseEvent[], prefix = ''): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const e of events) {
    const uid = e.data.uid as string;
    if (e.event !== 'task' || !uid.startsWith(prefix) || !FINAL.has(e.data.state as string)) {
      continue;
    }
    out.set(uid, [...(out.get(uid) ?? []), e.data.state as string]);
  }
  return out;
}
