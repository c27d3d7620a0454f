import { describe, expect, it } from '@jest/globals';
import { parseNodeAddresses } from '../../../../../src/agent/resources/slurm/node-addresses';

describe('parseNodeAddresses', () => {
  it("takes each node's NodeAddr, leaving out those reached by their name", () => {
    // recorded from the lab cluster (trimmed), plus a node whose address is its name
    const text = [
      'NodeName=n1 Arch=x86_64 CPUTot=2 NodeAddr=127.0.0.1 NodeHostName=vm Port=17818',
      'NodeName=n2 Arch=x86_64 CPUTot=2 NodeAddr=10.1.0.2 NodeHostName=vm Port=17819',
      'NodeName=c7 Arch=x86_64 CPUTot=64 NodeAddr=c7 NodeHostName=c7',
      '',
    ].join('\n');
    expect(parseNodeAddresses(text)).toEqual(
      new Map([
        ['n1', '127.0.0.1'],
        ['n2', '10.1.0.2'],
      ]),
    );
  });

  it('is empty for text without nodes', () => {
    expect(parseNodeAddresses('No nodes in the system\n')).toEqual(new Map());
  });
});
