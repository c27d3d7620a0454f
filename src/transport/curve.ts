import * as zmq from 'zeromq';

/** A CurveZMQ key pair, both halves Z85-encoded (40 characters each). */
export interface KeyPair {
  publicKey: string;
  secretKey: string;
}

/**
 * What a socket that binds needs to be a CurveZMQ server: the session's secret key, and the ZAP
 * domain that says which issued keys this socket admits (see ZapHandler). `undefined` where a
 * session runs in the insecure mode it asked for by name.
 */
export interface ServerSecurity {
  secretKey: string;
  domain: string;
}

/** What a socket that connects needs: the session's public key and the peer's own key pair. */
export interface ClientSecurity extends KeyPair {
  serverKey: string;
}

/** A fresh key pair (libzmq's own generator; zeromq.js has CURVE built in). */
export function newKeyPair(): KeyPair {
  return zmq.curveKeyPair();
}

/** Socket options of a CurveZMQ server; none for an insecure session. */
export function serverOptions(
  s: ServerSecurity | undefined,
): Partial<zmq.SocketOptions<zmq.Socket>> {
  if (s === undefined) return {};
  return { curveServer: true, curveSecretKey: s.secretKey, zapDomain: s.domain };
}

/** Socket options of a CurveZMQ client; none for an insecure session. */
export function clientOptions(
  c: ClientSecurity | undefined,
): Partial<zmq.SocketOptions<zmq.Socket>> {
  if (c === undefined) return {};
  return { curveServerKey: c.serverKey, curvePublicKey: c.publicKey, curveSecretKey: c.secretKey };
}

/** Z85 (ZeroMQ's base-85) to bytes: ZAP requests carry a client's key as 32 raw bytes. */
export function z85Decode(text: string): Buffer {
  if (text.length % 5 !== 0) {
    throw new Error(`Z85 text of length ${text.length} is not a multiple of 5`);
  }
  const out = Buffer.alloc((text.length / 5) * 4);
  for (let i = 0, o = 0; i < text.length; i += 5, o += 4) {
    let value = 0;
    for (let j = 0; j < 5; j++) {
      const digit = Z85_DIGITS.indexOf(text[i + j]!);
      if (digit < 0) throw new Error(`'${text[i + j]}' is not a Z85 digit`);
      value = value * 85 + digit;
    }
    out.writeUInt32BE(value >>> 0, o);
  }
  return out;
}

const Z85_DIGITS =
  '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#';
