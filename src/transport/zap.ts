import * as zmq from 'zeromq';
import type { Logger } from '../lib/logger';
import { BadMessages } from '../lib/bad-messages';
import { bindWhenFree } from './bind-when-free';
import { z85Decode } from './curve';

/** libzmq asks whoever binds this address in its context whether to admit a peer (RFC 27). */
const ZAP_ENDPOINT = 'inproc://zeromq.zap.01';

interface Domain {
  /** Admitted client keys (raw bytes, hex) and the name each is known by. */
  keys: Map<string, string>;
  refused: number;
  bad: BadMessages;
}

/**
 * The ZAP handler of this process: admits a CurveZMQ peer to a socket only if its public key is
 * one the session issued for that socket's domain (a pilot's own sockets admit that pilot's key
 * alone). One per process, because libzmq has one handler address per context; sessions register
 * their domains and the handler closes when the last one goes. It must be bound before any
 * CURVE server socket accepts a peer: with no handler, libzmq admits every key.
 */
export class ZapHandler {
  private static current: ZapHandler | undefined;

  private readonly domains = new Map<string, Domain>();
  private readonly loop: Promise<void>;

  private constructor(private readonly sock: zmq.Router) {
    this.loop = this.serve();
  }

  /** The process's handler, bound on first use. */
  static async shared(): Promise<ZapHandler> {
    if (ZapHandler.current !== undefined) return ZapHandler.current;
    const sock = new zmq.Router({ linger: 0 });
    // unbinding first instead aborts libzmq while ZAP pipes of just-closed CURVE sockets are
    // torn down: a handler opened right after the last one waits for its address
    await bindWhenFree(sock, ZAP_ENDPOINT);
    // another caller may have bound it while we awaited: keep the first
    if (ZapHandler.current !== undefined) {
      sock.close();
      return ZapHandler.current;
    }
    ZapHandler.current = new ZapHandler(sock);
    return ZapHandler.current;
  }

  /** Admits `publicKey` (Z85) as `name` on the sockets of `domain`; logs refusals there. */
  admit(domain: string, name: string, publicKey: string, log: Logger): void {
    let d = this.domains.get(domain);
    if (d === undefined) {
      d = { keys: new Map(), refused: 0, bad: new BadMessages(log) };
      this.domains.set(domain, d);
    }
    d.keys.set(z85Decode(publicKey).toString('hex'), name);
  }

  /** Connections refused on `domain` so far. */
  refused(domain: string): number {
    return this.domains.get(domain)?.refused ?? 0;
  }

  /** Forgets `domains`; closes the handler once none is left. */
  async release(domains: Iterable<string>): Promise<void> {
    for (const d of domains) this.domains.delete(d);
    if (this.domains.size > 0 || ZapHandler.current !== this) return;
    ZapHandler.current = undefined;
    this.sock.close();
    await this.loop;
  }

  private async serve(): Promise<void> {
    try {
      for await (const frames of this.sock) {
        const reply = this.decide(frames);
        await this.sock.send(reply);
      }
    } catch (e) {
      if (!this.sock.closed) throw e;
    }
  }

  /**
   * Request: [routing id, '', version, request id, domain, address, identity, mechanism,
   * credentials...]. Reply: [routing id, '', version, request id, status, text, user id, metadata].
   */
  private decide(frames: Buffer[]): (Buffer | string)[] {
    const [route, empty, version, requestId, domainF, addressF, , mechanismF, key] = frames;
    const answer = (status: string, text: string, user = ''): (Buffer | string)[] => [
      route ?? '',
      empty ?? '',
      version ?? '1.0',
      requestId ?? '',
      status,
      text,
      user,
      '',
    ];
    const domain = domainF?.toString() ?? '';
    const d = this.domains.get(domain);
    const name =
      mechanismF?.toString() === 'CURVE' && key !== undefined
        ? d?.keys.get(key.toString('hex'))
        : undefined;
    if (name !== undefined) return answer('200', 'OK', name);
    if (d !== undefined) {
      d.refused++;
      d.bad.report('connection refused: key not issued for this socket', {
        domain,
        peer: addressF?.toString(),
        mechanism: mechanismF?.toString(),
        refused: d.refused,
      });
    }
    return answer('400', 'key not admitted');
  }
}
