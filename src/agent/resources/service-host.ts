import * as dgram from 'node:dgram';
import * as dns from 'node:dns/promises';
import * as os from 'node:os';

/**
 * Where other machines reach a service on the agent's node: its host name when that resolves,
 * else the address this node uses to reach the client (`clientAddress`, a tcp:// endpoint of
 * the bootstrap file; a UDP connect picks the route without sending a packet), else loopback.
 * A batch node's name need not resolve (a container, a test cluster of virtual nodes).
 */
export async function serviceHost(clientAddress: string): Promise<string> {
  const name = os.hostname();
  try {
    await dns.lookup(name);
    return name;
  } catch {
    // not resolvable: fall through to the route's address
  }
  const m = /^tcp:\/\/\[?([^\]]+?)\]?:(\d+)$/.exec(clientAddress);
  if (m === null) return '127.0.0.1';
  return routeAddress(m[1]!, Number(m[2])).catch(() => '127.0.0.1');
}

/** The local address of the route to host:port. */
function routeAddress(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
    socket.once('error', (e) => {
      socket.close();
      reject(e);
    });
    socket.connect(port, host, () => {
      const { address } = socket.address();
      socket.close();
      resolve(address);
    });
  });
}
