/**
 * The Node function worker: a warm process that runs function tasks for a FunctionPool, in the
 * protocol of protocol.ts (docs/function-workers.md). Requests on fd 3, replies on fd 4; what
 * a call prints goes with its result when init asks for it (capture.ts), else (and what is
 * printed between calls) to its stdout and stderr (the pool's log files).
 *
 * Calls run one at a time, in the order received. A function's module is imported once per
 * worker and kept, or its import error is kept: every later call of that module fails with the
 * same error (phase 'import') without importing again. A call's environment and cwd come as
 * changes to the previous call's (protocol 2); they are set in process.env and made the working
 * directory before its module is looked up (its top level sees them too), and the next call
 * changes only what differs (call-environment.ts, which also undoes a function's own change of them).
 * Results go out in one frame per chunk of requests read (the calls it ran to their end), and
 * those of promises once per turn of the event loop.
 *
 * It exits when fd 3 ends (the parent closed it or died), and on a frame it cannot read. A
 * canceled call is answered at once; what the function still does is not stopped (a promise
 * cannot be aborted), and a function that never yields cannot even see the cancel: the pool
 * kills the worker then.
 */
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import { Socket } from 'node:net';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { encodeResult } from './encodable';
import { CallEnvironment } from './call-environment';
import { OutputCapture } from './capture';
import { toWireError } from './wire-error';
import {
  DEFAULT_MAX_RESULT_BYTES,
  FrameReader,
  PROTOCOL_VERSION,
  REPLY_FRAME_TARGET_BYTES,
  frame,
  protocolCodec,
  type CallPhase,
  type ParentMessage,
  type WireCall,
  type WireError,
  type WireResult,
  type WorkerMessage,
} from './protocol';

/** A call's function, or why there is none (`phase`: 'import' when its module did not load). */
type Target = { fn: (...args: unknown[]) => unknown } | { error: WireError; phase: CallPhase };

/** A module: loaded, failed to load, or loading. */
type Loaded = { ns: Record<string, unknown> } | { error: WireError } | { loading: Promise<void> };

const codec = protocolCodec();
const CACHE_ENTRIES = 10_000;
const homeDir = process.cwd();
let maxResultBytes = DEFAULT_MAX_RESULT_BYTES;
/** What one call may print, kept for it (init); 0: its output goes to the log files. */
let maxOutputBytes = 0;
const capture = new OutputCapture();

/** module (as the call names it) + cwd -> its resolved file, or the error resolving it. */
const resolved = new Map<string, { file: string } | { error: WireError }>();
/** resolved file -> the module. */
const modules = new Map<string, Loaded>();
/** module + cwd + export -> what to call. */
const targets = new Map<string, Target>();

let queue: WireCall[] = [];
let head = 0;
/** Ids in `queue` not yet started, so a cancel of an unknown id is told apart. */
const waiting = new Set<number>();
/** Ids canceled while waiting: skipped when their turn comes. */
const dropped = new Set<number>();
/** The call awaited now (a promise, or its module's import). */
let current: { id: number; abandoned: boolean } | undefined;

let outbox: WireResult[] = [];
let flushQueued = false;
/** The last call's target, and what it was looked up by: calls of one function follow. */
let lastKey = { module: '', export: undefined as string | undefined, base: '' };
let lastTarget: Target | undefined;

const callEnv = new CallEnvironment(homeDir);

const input = new Socket({ fd: 3, readable: true, writable: false });
const output = new Socket({ fd: 4, readable: false, writable: true });
const reader = new FrameReader(2 ** 31);

function send(msg: WorkerMessage): void {
  output.write(frame(codec.pack(msg)));
}

function die(why: string): never {
  fs.writeSync(2, `pilotfish function worker: ${why}\n`); // never a call's output
  process.exit(70);
}

input.on('data', (chunk: Buffer) => {
  let payloads: Buffer[];
  try {
    payloads = reader.push(chunk);
  } catch (e) {
    die(String(e));
  }
  for (const p of payloads) {
    let m: ParentMessage;
    try {
      m = codec.unpack(p) as ParentMessage;
    } catch (e) {
      die(`unreadable frame: ${String(e)}`);
    }
    onMessage(m);
  }
  // what ran to its end goes out now; a call awaited answers from settle()
  flush();
});
input.on('end', () => process.exit(0));
input.on('error', (e) => die(`fd 3: ${e.message}`));
// The parent is gone: nobody to answer.
output.on('error', () => process.exit(0));

function onMessage(m: ParentMessage): void {
  switch (m.t) {
    case 'init':
      if (m.protocol !== PROTOCOL_VERSION) {
        die(`protocol ${m.protocol} asked, ${PROTOCOL_VERSION} spoken`);
      }
      maxResultBytes = m.maxResultBytes;
      maxOutputBytes = m.maxOutputBytes ?? 0;
      if (maxOutputBytes > 0) capture.install(maxOutputBytes);
      break;
    case 'calls':
      for (const c of m.calls) waiting.add(c.id);
      if (head === queue.length) {
        queue = m.calls;
        head = 0;
      } else {
        for (const c of m.calls) queue.push(c);
      }
      drain();
      break;
    case 'cancel':
      cancel(m.ids);
      break;
    default:
      die(`unknown message ${JSON.stringify((m as { t?: unknown }).t)}`);
  }
}

function cancel(ids: number[]): void {
  for (const id of ids) {
    if (current?.id === id) {
      current.abandoned = true;
      current = undefined;
      reply(failure(id, canceled('while it ran'), 'call'));
    } else if (waiting.delete(id)) {
      dropped.add(id);
      reply(failure(id, canceled('before it started'), 'call'));
    }
  }
  drain();
}

function canceled(when: string): WireError {
  return { name: 'Canceled', message: `the call was canceled ${when}` };
}

/** Runs queued calls until one must be awaited or none is left. */
function drain(): void {
  while (current === undefined && head < queue.length) {
    const c = queue[head++]!;
    callEnv.absorb(c); // a dropped call's changes hold for the calls after it
    if (dropped.delete(c.id)) continue;
    waiting.delete(c.id);
    run(c);
  }
  if (current === undefined && head === queue.length) {
    queue = [];
    head = 0;
  }
}

function run(c: WireCall): void {
  try {
    callEnv.enter();
  } catch (e) {
    reply(failure(c.id, wireError(e), 'call')); // its directory cannot be entered
    return;
  }
  const target = targetOf(c);
  if (target === undefined) return; // its module is being imported: run() again once it is
  if ('error' in target) {
    reply(failure(c.id, target.error, target.phase));
    return;
  }
  let value: unknown;
  // what it prints from now until its answer is its own
  if (maxOutputBytes > 0) capture.start(c.id, c.cap);
  try {
    const fn = target.fn; // called bare: `this` is undefined, as for a plain call
    value = fn(...(c.args ?? []));
  } catch (e) {
    reply(failure(c.id, wireError(e), 'call'));
    return;
  }
  if (!isThenable(value)) {
    reply(success(c.id, value));
    return;
  }
  const me = { id: c.id, abandoned: false };
  current = me;
  Promise.resolve(value).then(
    (v) => settle(me, success(me.id, v)),
    (e: unknown) => settle(me, failure(me.id, wireError(e), 'call')),
  );
}

function settle(me: { id: number; abandoned: boolean }, result: WireResult): void {
  if (me.abandoned) return;
  current = undefined;
  reply(result);
  drain();
  flushSoon();
}

/** What the call names: the last call's function again, or looked up (and kept) by key. */
function targetOf(c: WireCall): Target | undefined {
  const base = callEnv.dir;
  const last = lastKey;
  if (
    lastTarget !== undefined &&
    c.module === last.module &&
    c.export === last.export &&
    base === last.base
  ) {
    return lastTarget;
  }
  // a path or URL means the same file from any cwd: one entry, not one per task sandbox
  const key = `${isPath(c.module) ? '' : base}\0${c.module}\0${c.export ?? ''}`;
  const target = targets.get(key) ?? findTarget(c, base, key);
  if (target !== undefined) {
    lastKey = { module: c.module, export: c.export, base };
    lastTarget = target;
  }
  return target;
}

/** The call's function once its module is loaded; undefined while it loads (run() comes back). */
function findTarget(c: WireCall, base: string, key: string): Target | undefined {
  const where = resolve(c.module, base);
  if ('error' in where) return remember(key, { error: where.error, phase: 'import' });
  const loaded = modules.get(where.file) ?? load(where.file);
  if ('loading' in loaded) {
    wait(c, loaded.loading);
    return undefined;
  }
  if ('error' in loaded) return remember(key, { error: loaded.error, phase: 'import' });
  return remember(key, pick(loaded.ns, c));
}

function remember(key: string, target: Target): Target {
  bounded(targets).set(key, target);
  return target;
}

/** Imports `file`, once: later calls of it wait for the same import. */
function load(file: string): Loaded {
  const url = file.startsWith('file:') ? file : pathToFileURL(file).href;
  const loading = import(url).then(
    (ns: Record<string, unknown>) => void modules.set(file, { ns }),
    (e: unknown) => void modules.set(file, { error: wireError(e) }),
  );
  const entry = { loading };
  modules.set(file, entry);
  return entry;
}

/** The call waits (as `current`) for its module, then runs. */
function wait(c: WireCall, loading: Promise<void>): void {
  const me = { id: c.id, abandoned: false };
  current = me;
  void loading.then(() => {
    if (me.abandoned) return;
    current = undefined;
    run(c);
    drain();
    flushSoon();
  });
}

function isPath(module: string): boolean {
  return module.startsWith('file:') || path.isAbsolute(module);
}

/**
 * `map`, emptied once it holds CACHE_ENTRIES: names resolved from each task's own cwd would
 * otherwise pile up. Loaded modules stay (`modules`): only their names are looked up again.
 */
function bounded<K, V>(map: Map<K, V>): Map<K, V> {
  if (map.size >= CACHE_ENTRIES) map.clear();
  return map;
}

/** The file a module name means, seen from `base`; kept, as import errors are. */
function resolve(module: string, base: string): { file: string } | { error: WireError } {
  const key = `${isPath(module) ? '' : base}\0${module}`;
  let found = resolved.get(key);
  if (found === undefined) {
    try {
      const file = isPath(module)
        ? module
        : createRequire(path.join(base, 'noop.js')).resolve(module);
      found = { file };
    } catch (e) {
      const error = wireError(e);
      if (error.code === 'MODULE_NOT_FOUND') {
        // Node's text names a made-up file in `base` as the one that required it
        error.message = `cannot find module '${module}' from '${base}'`;
        delete error.stack;
      }
      found = { error };
    }
    bounded(resolved).set(key, found);
  }
  return found;
}

/** The function the call names in a loaded module (a CommonJS one's exports are its default). */
function pick(ns: Record<string, unknown>, c: WireCall): Target {
  const cjs = ns.default as Record<string, unknown> | undefined;
  const name = c.export ?? 'default';
  let fn = ns[name];
  if (fn === undefined && c.export !== undefined && cjs != null) fn = cjs[name];
  if (typeof fn === 'function') return { fn: fn as (...args: unknown[]) => unknown };
  const exported = Object.keys(ns).filter((k) => typeof ns[k] === 'function');
  if (cjs != null && typeof cjs === 'object') {
    for (const k of Object.keys(cjs)) if (typeof cjs[k] === 'function') exported.push(k);
  }
  const list = exported.length > 0 ? [...new Set(exported)].join(', ') : 'none';
  const what = c.export === undefined ? 'no default export function' : `no function '${name}'`;
  const message =
    `module '${c.module}' has ${what}` +
    `${c.export === undefined ? ' (name one in function.export)' : ''}; its functions: ${list}`;
  return { error: { name: 'TypeError', message }, phase: 'call' };
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return (
    v !== null &&
    (typeof v === 'object' || typeof v === 'function') &&
    typeof (v as { then?: unknown }).then === 'function'
  );
}

function success(id: number, value: unknown): WireResult {
  const encoded = encodeResult(value, maxResultBytes);
  return encoded.ok ? { id, ok: true, value: encoded.bytes } : failure(id, encoded.error, 'encode');
}

function failure(id: number, error: WireError, phase: CallPhase): WireResult {
  return { id, ok: false, error, phase };
}

/** What was thrown, as the protocol carries it; its stack without this file's frames. */
function wireError(e: unknown): WireError {
  return toWireError(e, __filename);
}

function reply(r: WireResult): void {
  capture.end(r); // the output of the call it answers, if captured
  outbox.push(r);
}

/**
 * After a promise's outcome: once this turn is over, so the calls behind it that settle in the
 * same turn (a chain of quick async functions) answer in the same frame.
 */
function flushSoon(): void {
  if (flushQueued || outbox.length === 0) return;
  flushQueued = true;
  setImmediate(flush);
}

/** The results not yet sent, in frames of about REPLY_FRAME_TARGET_BYTES at most. */
function flush(): void {
  flushQueued = false;
  for (const f of replyFrames()) output.write(f);
}

/** The outbox, emptied, as reply frames. */
function replyFrames(): Buffer[] {
  const all = outbox;
  outbox = [];
  const frames: Buffer[] = [];
  let from = 0;
  let bytes = 0;
  for (let i = 0; i < all.length; i++) {
    const r = all[i]!;
    bytes += r.ok ? r.value.length : 3 * (r.error.message.length + (r.error.stack?.length ?? 0));
    bytes += (r.stdout?.length ?? 0) + (r.stderr?.length ?? 0);
    if (bytes >= REPLY_FRAME_TARGET_BYTES || i === all.length - 1) {
      const results = from === 0 && i === all.length - 1 ? all : all.slice(from, i + 1);
      frames.push(frame(codec.pack({ t: 'done', results } satisfies WorkerMessage)));
      from = i + 1;
      bytes = 0;
    }
  }
  return frames;
}

/**
 * A function ended the process (process.exit(), an uncaught exception) after calls of the same
 * chunk ran: their results still go out, else the pool would take the first of them for the
 * call that ended the worker, and run that one again in the replacement. Best effort: not
 * behind writes the socket still holds, nor into a full pipe.
 */
process.on('exit', () => {
  capture.spill(); // what the call that ended it printed: to the log files
  if (outbox.length === 0 || output.writableLength > 0) return;
  try {
    for (const f of replyFrames()) {
      for (let at = 0; at < f.length;) at += fs.writeSync(4, f, at);
    }
  } catch {
    // the pool is gone, or the pipe is full: the results are lost with the worker
  }
});

send({
  t: 'ready',
  protocol: PROTOCOL_VERSION,
  pid: process.pid,
  language: 'node',
  version: process.versions.node,
});
