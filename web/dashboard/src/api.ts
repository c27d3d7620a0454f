// The dashboard's one way to the server it came from: fetch with the bearer token, and
// server-sent event streams read through fetch (EventSource cannot send a header), resumed
// with Last-Event-ID after a drop so that nothing is missed or seen twice.

const KEY = 'pilotfish.token';

/** The token: from `#token=...` once (then dropped from the address), else this tab's storage. */
export function takeToken(): string | undefined {
  const m = /^#token=([^&]+)/.exec(location.hash);
  if (m !== null) {
    sessionStorage.setItem(KEY, decodeURIComponent(m[1]!));
    history.replaceState(null, '', `${location.pathname}#/overview`);
  }
  return sessionStorage.getItem(KEY) ?? undefined;
}

export function setToken(token: string): void {
  sessionStorage.setItem(KEY, token);
}

export function forgetToken(): void {
  sessionStorage.removeItem(KEY);
}

/** An answer of the API that was not 2xx: its status and the API's error code and message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function headers(extra: Record<string, string> = {}): Record<string, string> {
  return { authorization: `Bearer ${sessionStorage.getItem(KEY) ?? ''}`, ...extra };
}

async function failed(r: Response): Promise<ApiError> {
  try {
    const body = (await r.json()) as { error?: { code?: string; message?: string } };
    return new ApiError(
      r.status,
      body.error?.code ?? 'E_HTTP',
      body.error?.message ?? r.statusText,
    );
  } catch {
    return new ApiError(r.status, 'E_HTTP', `${r.status} ${r.statusText}`);
  }
}

export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const r = await fetch(path, { headers: headers(), ...(signal ? { signal } : {}) });
  if (!r.ok) throw await failed(r);
  return (await r.json()) as T;
}

export async function getText(path: string, signal?: AbortSignal): Promise<string> {
  const r = await fetch(path, { headers: headers(), ...(signal ? { signal } : {}) });
  if (!r.ok) throw await failed(r);
  return r.text();
}

export async function postJson<T>(path: string, body: unknown = {}): Promise<T> {
  const r = await fetch(path, {
    method: 'POST',
    headers: headers({ 'content-type': 'application/json' }),
    body: JSON.stringify(body),
  });
  if (!r.ok) throw await failed(r);
  return (await r.json()) as T;
}

/** One server-sent event. */
export interface StreamEvent {
  id?: string;
  event: string;
  data: string;
}

/**
 * Follows a server-sent event stream until `signal` aborts or the server sends `end`: each
 * event to `on`, in order; after a dropped connection it reconnects (1 s later) from the last
 * id it saw. An answer that is not 2xx (a revoked token, a deleted task) ends it with `onError`.
 */
export async function follow(
  path: string,
  on: (e: StreamEvent) => void,
  signal: AbortSignal,
  onError: (e: unknown) => void = () => undefined,
): Promise<void> {
  let last: string | undefined;
  while (!signal.aborted) {
    try {
      const r = await fetch(path, {
        headers: headers(last !== undefined ? { 'last-event-id': last } : {}),
        signal,
      });
      if (!r.ok) return onError(await failed(r));
      let ended = false;
      for await (const e of events(r.body!)) {
        if (e.id !== undefined) last = e.id;
        on(e);
        if (e.event === 'end') ended = true;
      }
      if (ended) return;
    } catch (e) {
      if (signal.aborted) return;
      onError(e);
    }
    await new Promise((ok) => setTimeout(ok, 1000));
  }
}

/** The events of a text/event-stream body, as they come. */
async function* events(body: ReadableStream<Uint8Array>): AsyncGenerator<StreamEvent> {
  const reader = body.getReader();
  const text = new TextDecoder();
  let buf = '';
  try {
    for (;;) {
      const { value: bytes, done } = await reader.read();
      if (done) return;
      const value = text.decode(bytes, { stream: true });
      // every whole event of what came (a replay brings thousands at once), the rest kept
      const blocks = (buf + value).split('\n\n');
      buf = blocks.pop()!;
      for (const block of blocks) {
        const e = parseBlock(block);
        if (e !== undefined) yield e;
      }
    }
  } finally {
    reader.releaseLock();
  }
}

function parseBlock(block: string): StreamEvent | undefined {
  let id: string | undefined;
  let event = 'message';
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
    if (field === 'id') id = value;
    else if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  if (data.length === 0 && id === undefined) return undefined;
  return { ...(id !== undefined ? { id } : {}), event, data: data.join('\n') };
}
