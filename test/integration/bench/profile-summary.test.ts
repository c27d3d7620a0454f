import { describe, expect, it } from '@jest/globals';
import { fileOf, roleOf, summarize, type CpuProfile } from '../../../bench/profile-summary';

const frame = (functionName: string, url: string, lineNumber = 0) => ({
  functionName,
  url,
  lineNumber,
  columnNumber: 0,
});

/** root -> main (agent/main.js) -> { decode (msgpackr), (idle), (garbage collector) } */
const agentProfile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame('(root)', ''), children: [2, 4, 5] },
    { id: 2, callFrame: frame('main', 'file:///repo/dist/src/agent/main.js', 9), children: [3] },
    { id: 3, callFrame: frame('unpack', 'file:///repo/node_modules/msgpackr/dist/node.cjs', 99) },
    { id: 4, callFrame: frame('(idle)', '') },
    { id: 5, callFrame: frame('(garbage collector)', '') },
  ],
  startTime: 0,
  endTime: 1_000,
  // sample i lasts timeDeltas[i + 1]; the last one gets the mean (1000 / 5 = 200)
  samples: [3, 3, 2, 4, 5],
  timeDeltas: [0, 100, 100, 100, 500],
};

describe('bench/profile-summary', () => {
  it('tells a profile apart by the scripts it ran', () => {
    expect(roleOf(agentProfile)).toBe('agent');
    const spawner: CpuProfile = {
      ...agentProfile,
      nodes: [
        ...agentProfile.nodes,
        {
          id: 6,
          callFrame: frame('x', 'file:///r/dist/src/components/executor/process/helper/main.js'),
        },
      ],
    };
    expect(roleOf(spawner)).toBe('spawner');
    const client: CpuProfile = {
      ...agentProfile,
      nodes: [{ id: 1, callFrame: frame('main', 'file:///r/dist/bench/run.js') }],
    };
    expect(roleOf(client)).toBe('client');
  });

  it('groups frames by repository file, npm package, node module or V8 pseudo-frame', () => {
    expect(fileOf(frame('f', 'file:///repo/dist/src/client/task-manager.js'))).toBe(
      'src/client/task-manager.js',
    );
    expect(fileOf(frame('f', 'file:///repo/node_modules/@scope/pkg/lib/x.js'))).toBe(
      'npm:@scope/pkg',
    );
    expect(fileOf(frame('f', 'node:internal/streams/readable'))).toBe(
      'node:internal/streams/readable',
    );
    expect(fileOf(frame('(program)', ''))).toBe('(program)');
    expect(fileOf(frame('writeUtf8String', ''))).toBe('(native)');
  });

  it('charges each sample the interval to the next one and leaves idle out of busy time', () => {
    const s = summarize('agent', [agentProfile]);
    expect(s.totalMs).toBeCloseTo(1.0);
    expect(s.idleMs).toBeCloseTo(0.5);
    expect(s.byFile).toEqual([
      ['npm:msgpackr', 0.2],
      ['(garbage collector)', 0.2],
      ['src/agent/main.js', 0.1],
    ]);
    expect(s.byFunction[0]).toEqual(['unpack npm:msgpackr:100', 0.2]);
    // msgpackr's time is charged to the agent code that called it
    expect(s.byComponent.map(([c]) => c)).toEqual(['src/agent/main.js', '(garbage collector)']);
    expect(s.byComponent[0]![1]).toBeCloseTo(0.3);
  });
});
