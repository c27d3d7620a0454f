import type { SandboxReply, SandboxRequest } from '../../generated';
import { coerceError } from '../../errors';
import { BadMessages } from '../../lib/bad-messages';
import { systemClock, type Clock, type Timer } from '../../lib/clock';
import type { Logger } from '../../lib/logger';
import {
  codeError,
  remoteFiles,
  type SandboxAsk,
  type SandboxFiles,
} from '../../lib/sandbox-files';
import { parseSandboxReply } from '../../lib/validate';
import { encode } from '../../transport/codec';

export type SandboxAnswer = { header: SandboxReply; data?: Buffer | undefined };

/** Sends frames to a pilot's agent: rejects where it is not connected (EHOSTUNREACH). */
export type AgentSend = (frames: Buffer[]) => Promise<void>;

const DEFAULT_TIMEOUT_MS = 10_000;

interface Pending {
  pilot: string;
  resolve(a: SandboxAnswer): void;
  reject(e: Error): void;
  timer: Timer;
}

/**
 * The client's looks into its pilots' sandboxes over their file channels (docs/output.md,
 * output over the session): requests addressed to each agent by its pilot's uid (its routing
 * id) on the pilot's own file socket, which admits that pilot's key alone; replies matched by
 * request number and checked (schema, session, pilot) before they are believed.
 */
export class SandboxAsks {
  private readonly senders = new Map<string, AgentSend>();
  private readonly pending = new Map<number, Pending>();
  private readonly bad: BadMessages;
  private readonly clock: Clock;
  private nextReq = 0;

  constructor(
    private readonly session: string,
    log: Logger,
    private readonly opts: { clock?: Clock; timeoutMs?: number } = {},
  ) {
    this.bad = new BadMessages(log);
    this.clock = opts.clock ?? systemClock;
  }

  /** `pilot`'s agent is reached through `send`. */
  attach(pilot: string, send: AgentSend): void {
    this.senders.set(pilot, send);
  }

  /** Asks `pilot`'s agent; rejects with an errno-like `code` where the agent said no or is away. */
  ask(pilot: string, body: SandboxAsk): Promise<SandboxAnswer> {
    const send = this.senders.get(pilot);
    if (send === undefined) {
      return Promise.reject(codeError('EHOSTUNREACH', `no file channel of pilot ${pilot}`));
    }
    const req = this.nextReq++;
    const header: SandboxRequest = { ...body, session: this.session, pilot, req };
    const waitMs = this.opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    return new Promise<SandboxAnswer>((resolve, reject) => {
      const timer = this.clock.setTimeout(() => {
        this.pending.delete(req);
        reject(
          codeError('ETIMEDOUT', `the agent of pilot ${pilot} did not answer in ${waitMs} ms`),
        );
      }, waitMs);
      this.pending.set(req, { pilot, resolve, reject, timer });
      send([encode(header)]).catch((e: unknown) => {
        const p = this.pending.get(req);
        if (p === undefined) return;
        this.pending.delete(req);
        p.timer.cancel();
        const why = coerceError(e).message;
        reject(codeError('EHOSTUNREACH', `the agent of pilot ${pilot} is not connected (${why})`));
      });
    }).then((a) => {
      if (a.header.ok) return a;
      const err = a.header.error ?? { code: 'E_TRANSFER', message: 'failed' };
      throw codeError(err.code, `pilot ${pilot}: ${err.message}`);
    });
  }

  /** A reply that came on `pilot`'s file socket. */
  settle(pilot: string, value: unknown, data: Buffer | undefined): void {
    let reply: SandboxReply;
    try {
      reply = parseSandboxReply(value);
    } catch (e) {
      return this.bad.report('invalid sandbox reply', { pilot, message: coerceError(e).message });
    }
    const p = this.pending.get(reply.req);
    if (reply.session !== this.session || reply.pilot !== pilot || p?.pilot !== pilot) {
      return this.bad.report('sandbox reply refused', { pilot, req: reply.req });
    }
    this.pending.delete(reply.req);
    p.timer.cancel();
    p.resolve({ header: reply, data });
  }

  /** `pilot`'s sandbox as output readers read it, through its agent. */
  files(pilot: string): SandboxFiles {
    return remoteFiles(async (body) => {
      const { header, data } = await this.ask(pilot, body);
      return { size: header.size, names: header.names, data };
    });
  }

  /** Fails what waits for an answer. */
  close(): void {
    for (const [req, p] of this.pending) {
      this.pending.delete(req);
      p.timer.cancel();
      p.reject(codeError('EHOSTUNREACH', 'the session closed its file channels'));
    }
  }
}
