import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

/**
 * TCP sockets this process holds open, as "state local->remote" strings: read from the
 * socket inodes of /proc/self/fd matched against /proc/net/tcp{,6}.
 */
export function openTcpSockets(): string[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // fd closed meanwhile
    }
  }
  const out: string[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue; // no IPv6 table on this kernel
    }
    for (const line of text.trim().split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (!inodes.has(f[9]!)) continue;
      const state = f[3] === '0A' ? 'LISTEN' : f[3] === '01' ? 'ESTABLISHED' : `state-${f[3]}`;
      out.push(`${state} ${port(f[1]!)}->${port(f[2]!)}`);
    }
  }
  return out.sort();
}

function port(hexAddr: string): number {
  return parseInt(hexAddr.split(':')[1]!, 16);
}
