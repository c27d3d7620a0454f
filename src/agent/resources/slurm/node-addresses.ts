import { execFile } from 'node:child_process';

/**
 * Where each node of the job is reached, by node name: its NodeAddr from `scontrol show node -o`
 * (a node name need not resolve; a site sets NodeAddr where it does not, and a lab of virtual
 * nodes on one machine gives them all loopback). Nodes whose NodeAddr is their name, and every
 * node when scontrol cannot say (the reason goes to `warn`), are left out: reached by name.
 */
export function slurmNodeAddresses(
  nodeList: string,
  warn: (message: string) => void,
): Promise<Map<string, string>> {
  return new Promise((resolve) => {
    execFile('scontrol', ['show', 'node', '-o', nodeList], { timeout: 10_000 }, (err, stdout) => {
      if (err !== null) {
        warn(`cannot read the addresses of nodes ${nodeList} (scontrol: ${err.message.trim()})`);
        return resolve(new Map());
      }
      resolve(parseNodeAddresses(stdout));
    });
  });
}

/** NodeName=n1 ... NodeAddr=10.0.0.1 of `scontrol show node -o` lines, by name. */
export function parseNodeAddresses(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const name = /(?:^|\s)NodeName=(\S+)/.exec(line)?.[1];
    const addr = /(?:^|\s)NodeAddr=(\S+)/.exec(line)?.[1];
    if (name !== undefined && addr !== undefined && addr !== name) out.set(name, addr);
  }
  return out;
}
