import * as net from 'node:net';
import { deferred, type Deferred } from '../../src/lib/deferred';

/**
 * Where a TcpProxy cuts by itself, in the MongoDB wire protocol: right after it forwarded the
 * request of a command to the server (the server has it, the client never hears back), or the
 * reply to one to the client (the client has it; nothing it sends next gets through).
 */
export interface CutPoint {
  after: 'request' | 'reply';
  /** The command: the first key of an OP_MSG body ('insert', 'findAndModify'). */
  command: string;
}

const HEADER_BYTES = 16;
const OP_MSG = 2013;
/** Past MongoDB's largest message (48 MB): a stream that says more is not its protocol. */
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

/**
 * Splits a stream into MongoDB wire messages (each starts with its int32 length). A stream
 * whose first four bytes are no plausible length is passed on as it comes, so the proxy
 * carries other protocols too (bytes wait only until four have come).
 */
export class WireFrames {
  private pending: Buffer = Buffer.alloc(0);
  framed = true;

  push(chunk: Buffer): Buffer[] {
    if (!this.framed) return [chunk];
    let buf = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const out: Buffer[] = [];
    while (buf.length >= 4) {
      const length = buf.readInt32LE(0);
      if (length < HEADER_BYTES || length > MAX_MESSAGE_BYTES) {
        this.framed = false;
        out.push(buf);
        buf = Buffer.alloc(0);
        break;
      }
      if (buf.length < length) break;
      out.push(buf.subarray(0, length));
      buf = buf.subarray(length);
    }
    this.pending = buf;
    return out;
  }
}

/** A message's ids, and its command when it is an OP_MSG request (the body's first key). */
export function wireMessageOf(msg: Buffer): {
  requestId: number;
  responseTo: number;
  command?: string;
} {
  const ids = { requestId: msg.readInt32LE(4), responseTo: msg.readInt32LE(8) };
  if (msg.length < HEADER_BYTES + 4 || msg.readInt32LE(12) !== OP_MSG) return ids;
  // sections after the flags: kind 0 is the body document, kind 1 a sized document sequence
  for (let at = HEADER_BYTES + 4; at + 6 < msg.length;) {
    const kind = msg[at];
    if (kind === 1) {
      const size = msg.readInt32LE(at + 1); // counts itself
      if (size < 4) break;
      at += 1 + size;
      continue;
    }
    if (kind !== 0) break;
    const nameAt = at + 1 + 4 + 1; // the document's length, then its first element's type
    const end = msg.indexOf(0, nameAt);
    if (msg[at + 5] === 0 || end < 0) break; // an empty document names nothing
    return { ...ids, command: msg.toString('utf8', nameAt, end) };
  }
  return ids;
}

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
  /** Command of each request forwarded, by request id, until its reply comes. */
  commands: Map<number, string>;
  /** Cut: nothing more is forwarded either way. */
  dead: boolean;
}

/**
 * A real TCP proxy on 127.0.0.1 in front of one server, for outage tests: `cut()` ends every
 * connection through it and refuses new ones (accepted and closed at once, as a server that
 * went away), `restore()` forwards again. MongoDB-aware only for `cutAfter`, which cuts at a
 * precise point of a command's round trip.
 */
export class TcpProxy {
  private readonly pairs = new Set<Pair>();
  /** Sockets ending after the last message a cutAfter let through. */
  private readonly lingering = new Set<net.Socket>();
  private isCut = false;
  private armed: { point: CutPoint; done: Deferred<void> } | undefined;
  /** Connections refused while cut (the client kept trying). */
  refused = 0;
  /** Connections forwarded. */
  accepted = 0;

  private constructor(
    private readonly server: net.Server,
    private readonly target: { host: string; port: number },
    readonly port: number,
  ) {
    server.on('connection', (s) => this.onConnection(s));
  }

  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return new TcpProxy(server, target, (server.address() as net.AddressInfo).port);
  }

  /** Where clients connect: `127.0.0.1:<port>`. */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get cutNow(): boolean {
    return this.isCut;
  }

  /** Ends every connection at once and refuses new ones until restore(). */
  cut(): void {
    this.isCut = true;
    this.armed?.done.resolve();
    this.armed = undefined;
    this.dropAll(undefined);
  }

  /** Forwards new connections again. */
  restore(): void {
    this.isCut = false;
  }

  /**
   * Cuts (as cut()) right after the first message at `point` went through whole; resolves
   * then. The connection that carried it ends after that message instead of being reset.
   */
  cutAfter(point: CutPoint): Promise<void> {
    if (this.isCut || this.armed !== undefined) {
      throw new Error(
        `cutAfter ${point.after} of ${point.command}: the proxy is already cut or armed`,
      );
    }
    this.armed = { point, done: deferred<void>() };
    return this.armed.done.promise;
  }

  /** Cuts, and stops listening; resolves once the port is free. */
  async close(): Promise<void> {
    this.cut();
    for (const s of this.lingering) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private onConnection(client: net.Socket): void {
    client.on('error', () => undefined); // reset by the peer: 'close' follows
    if (this.isCut) {
      this.refused++;
      client.destroy();
      return;
    }
    this.accepted++;
    const upstream = net.connect(this.target);
    upstream.on('error', () => undefined);
    const pair: Pair = { client, upstream, commands: new Map(), dead: false };
    this.pairs.add(pair);
    const requests = new WireFrames();
    const replies = new WireFrames();
    client.on('data', (chunk: Buffer) => {
      for (const m of requests.push(chunk)) this.forward(pair, 'request', m, requests.framed);
    });
    upstream.on('data', (chunk: Buffer) => {
      for (const m of replies.push(chunk)) this.forward(pair, 'reply', m, replies.framed);
    });
    client.on('end', () => (pair.dead ? undefined : upstream.end()));
    upstream.on('end', () => (pair.dead ? undefined : client.end()));
    const drop = (): void => {
      if (pair.dead) return;
      pair.dead = true;
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', drop);
    upstream.on('close', drop);
  }

  private forward(pair: Pair, dir: 'request' | 'reply', msg: Buffer, framed: boolean): void {
    if (pair.dead) return;
    const to = dir === 'request' ? pair.upstream : pair.client;
    const armed = this.armed;
    if (!framed || armed === undefined) {
      to.write(msg);
      if (framed) this.note(pair, dir, msg);
      return;
    }
    const command = this.note(pair, dir, msg);
    if (armed.point.after !== dir || command !== armed.point.command) {
      to.write(msg);
      return;
    }
    // this message goes through whole, then its connection ends; every other one is reset
    this.armed = undefined;
    this.isCut = true;
    this.lingering.add(to);
    to.once('close', () => this.lingering.delete(to));
    to.end(msg);
    this.dropAll(to);
    armed.done.resolve();
  }

  /** Remembers a request's command; for a reply, says whose it is. */
  private note(pair: Pair, dir: 'request' | 'reply', msg: Buffer): string | undefined {
    const m = wireMessageOf(msg);
    if (dir === 'request') {
      if (m.command !== undefined) pair.commands.set(m.requestId, m.command);
      return m.command;
    }
    const command = pair.commands.get(m.responseTo);
    pair.commands.delete(m.responseTo);
    return command;
  }

  /** Marks every pair dead and destroys its sockets, but `keep` (ending on its own). */
  private dropAll(keep: net.Socket | undefined): void {
    for (const p of this.pairs) {
      p.dead = true;
      for (const s of [p.client, p.upstream]) if (s !== keep) s.destroy();
    }
    this.pairs.clear();
  }
}
