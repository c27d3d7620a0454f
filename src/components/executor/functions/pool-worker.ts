/**
 * One worker of a FunctionPool, as the pool sees it: its process, the calls waiting for it and
 * those it was sent, and its side of the protocol (the init, the writes, the reading of replies).
 * What to do when it is ready or has died is the pool's (hooks).
 */
import { errorMeta } from '../../../errors';
import { deferred, type Deferred } from '../../../lib/deferred';
import type { Logger } from '../../../lib/logger';
import type { CallOutcome, CallPrinted, CallStarted, FunctionCallJob } from './pool-types';
import {
  FrameReader,
  PROTOCOL_VERSION,
  frame,
  maxReplyFrameBytes,
  protocolCodec,
  type ParentMessage,
  type WireCall,
  type WireResult,
  type WorkerMessage,
} from './worker/protocol';
import { killGroup, type WorkerProcess } from './worker-process';

export interface Call {
  job: FunctionCallJob;
  /** The call's id on the wire: the pool's, so a late reply to an earlier attempt is not taken. */
  id: number;
  /** The worker whose pipe it went into (undefined while it waits in a `pending`). */
  sentTo?: PoolWorker;
  /**
   * It was in a worker that died with others not yet answered: which one killed it is not
   * known, so it runs alone in the replacement, answered before the next call is written.
   */
  suspect?: boolean;
}

export interface WorkerHooks {
  log: Logger;
  ready(w: PoolWorker): void;
  finished(w: PoolWorker, outcomes: CallOutcome[]): void;
  closed(w: PoolWorker, exitCode: number | null, signal: string | null): void;
}

const codec = protocolCodec();

export class PoolWorker {
  ready = false;
  alive = true;
  /** Calls for it not yet written (it is starting, or they came this turn). */
  pending: Call[];
  /** Written and not answered, in the order written: the first one is running. */
  readonly inflight = new Map<number, Call>();
  private cancels: number[] = [];
  /** The call a stop('kill') killed it for. */
  killedFor: number | undefined;
  /** Why the pool killed it on its own (it broke the protocol, it did not get ready). */
  why: string | undefined;
  readonly readyWait = deferred<void>();
  readonly closed: Deferred<void> = deferred<void>();
  private readonly reader: FrameReader;
  private readonly startTimer: NodeJS.Timeout;
  /** The environment and cwd of the last call written to it: the next call is sent as changes. */
  private sentEnv: Record<string, string> = {};
  private sentCwd = '';

  constructor(
    readonly index: number,
    readonly p: WorkerProcess,
    limits: { maxResultBytes: number; maxOutputBytes: number },
    startTimeoutMs: number,
    private readonly hooks: WorkerHooks,
    pending: Call[],
  ) {
    this.pending = pending;
    const { maxResultBytes, maxOutputBytes } = limits;
    this.reader = new FrameReader(maxReplyFrameBytes(maxResultBytes, maxOutputBytes));
    // only the pool's start() waits for readiness: a replacement's failure is seen in `closed`
    this.readyWait.promise.catch(() => undefined);
    const init: ParentMessage = {
      t: 'init',
      protocol: PROTOCOL_VERSION,
      worker: index,
      maxResultBytes,
    };
    if (maxOutputBytes > 0) init.maxOutputBytes = maxOutputBytes;
    p.requests.write(frame(codec.pack(init)));
    // EPIPE once it died: 'close' tells the pool
    p.requests.on('error', (e) =>
      hooks.log.debug('function worker request pipe error', { pid: p.pid, ...errorMeta(e) }),
    );
    p.replies.on('data', (chunk: Buffer) => this.onReplies(chunk));
    p.proc.on('error', (e) =>
      hooks.log.error('function worker process error', { index, pid: p.pid, ...errorMeta(e) }),
    );
    p.proc.on('close', (code, signal) => {
      this.alive = false;
      clearTimeout(this.startTimer);
      killGroup(p.pid); // what it started in its group goes with it
      hooks.closed(this, code, signal);
      this.closed.resolve();
    });
    this.startTimer = setTimeout(() => {
      hooks.log.error('function worker did not get ready: killing it', { index, pid: p.pid });
      this.why ??= `it did not get ready within ${startTimeoutMs} ms`;
      this.kill();
    }, startTimeoutMs);
  }

  /** The call it runs now, if it was sent any. */
  get running(): Call | undefined {
    return this.inflight.values().next().value;
  }

  cancel(id: number): void {
    this.cancels.push(id);
  }

  kill(): void {
    killGroup(this.p.pid);
  }

  /** Ends its request pipe: it exits once it reads the end. */
  end(): void {
    clearTimeout(this.startTimer);
    this.p.requests.end();
  }

  /** Writes its cancels and waiting calls in one write; the calls started by it. */
  flush(started: CallStarted[]): void {
    if (!this.alive || !this.ready) return;
    const frames: Buffer[] = [];
    if (this.cancels.length > 0) {
      frames.push(frame(codec.pack({ t: 'cancel', ids: this.cancels })));
      this.cancels = [];
    }
    // a suspect goes alone, once nothing else is in the worker (see Call.suspect)
    const solo = this.pending[0]?.suspect === true;
    if (this.pending.length > 0 && !(solo && this.inflight.size > 0)) {
      const sent = solo ? this.pending.splice(0, 1) : this.pending;
      const calls: WireCall[] = [];
      for (const c of sent) {
        calls.push(this.wireCall(c));
        c.sentTo = this;
        this.inflight.set(c.id, c);
        started.push({ uid: c.job.uid, pid: this.p.pid });
      }
      if (!solo) this.pending = [];
      frames.push(frame(codec.pack({ t: 'calls', calls })));
    }
    if (frames.length > 0) {
      this.p.requests.write(frames.length === 1 ? frames[0]! : Buffer.concat(frames));
    }
  }

  /** The call as the worker is sent it: its environment and cwd as changes to the last call's. */
  private wireCall(c: Call): WireCall {
    const { job } = c;
    const w: WireCall = { id: c.id, module: job.module };
    if (job.export !== undefined) w.export = job.export;
    if (job.args !== undefined) w.args = job.args;
    if (job.outputCap !== undefined) w.cap = job.outputCap;
    const env = job.env;
    const last = this.sentEnv;
    let set: Record<string, string> | undefined;
    let unset: string[] | undefined;
    for (const k in env) {
      if (!Object.hasOwn(env, k)) continue;
      const v = env[k]!;
      if (last[k] === v && Object.hasOwn(last, k)) continue;
      set ??= {};
      if (k === '__proto__') Object.defineProperty(set, k, { value: v, enumerable: true });
      else set[k] = v;
    }
    for (const k in last) if (!Object.hasOwn(env, k)) (unset ??= []).push(k);
    if (set !== undefined) w.env = set;
    if (unset !== undefined) w.unset = unset;
    this.sentEnv = env; // jobs are not changed once given to the pool
    const cwd = job.cwd ?? '';
    if (cwd !== this.sentCwd) {
      w.cwd = cwd;
      this.sentCwd = cwd;
    }
    return w;
  }

  private onReplies(chunk: Buffer): void {
    const finished: CallOutcome[] = [];
    try {
      for (const payload of this.reader.push(chunk)) {
        const m = codec.unpack(payload) as WorkerMessage;
        if (m.t === 'done') this.onResults(m.results, finished);
        else if (m.t === 'ready') this.onReady(m);
        else throw new Error(`unknown message ${JSON.stringify(m)}`);
      }
    } catch (e) {
      // the stream cannot be followed any more: replaced, as a worker that died
      this.hooks.log.error('function worker broke the protocol: killing it', {
        index: this.index,
        pid: this.p.pid,
        ...errorMeta(e),
      });
      this.why ??= `it broke the protocol (${e instanceof Error ? e.message : String(e)})`;
      this.kill();
    }
    if (finished.length > 0) this.hooks.finished(this, finished);
  }

  private onReady(m: Extract<WorkerMessage, { t: 'ready' }>): void {
    if (m.protocol !== PROTOCOL_VERSION) {
      throw new Error(`worker speaks protocol ${m.protocol}, the pool ${PROTOCOL_VERSION}`);
    }
    clearTimeout(this.startTimer);
    this.ready = true;
    this.readyWait.resolve();
    this.hooks.log.debug('function worker ready', { index: this.index, ...m });
    this.hooks.ready(this);
  }

  private onResults(results: Extract<WorkerMessage, { t: 'done' }>['results'], out: CallOutcome[]) {
    for (const r of results) {
      const call = this.inflight.get(r.id);
      if (call === undefined) continue; // taken back, or answered already
      this.inflight.delete(r.id);
      const uid = call.job.uid;
      const o: CallOutcome = r.ok
        ? { uid, ok: true, value: r.value }
        : { uid, ok: false, error: r.error, phase: r.phase };
      if (r.stdout !== undefined || r.stderr !== undefined) o.printed = printedOf(call, r);
      out.push(o);
    }
  }
}

/** What the call printed, as its result brings it. */
function printedOf(call: Call, r: WireResult): CallPrinted {
  const printed: CallPrinted = { attempt: call.job.attempt ?? 1 };
  if (r.stdout !== undefined) printed.stdout = r.stdout;
  if (r.stderr !== undefined) printed.stderr = r.stderr;
  if (r.dropped !== undefined) printed.dropped = r.dropped;
  return printed;
}
