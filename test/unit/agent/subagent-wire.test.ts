import { describe, expect, it } from '@jest/globals';
import { readSubAgentFrame, subAgentFrame } from '../../../src/agent/subagents/wire';
import { encode } from '../../../src/transport/codec';
import { processKind } from '../../../src/components/executor/kinds/process';
import type { TaskRecord } from '../../../src/generated';

const PEER = { session: 's1', pilot: 'p1', node: 'n3' };
const base = { session: 's1', pilot: 'p1', node: 'n3' } as const;

describe('the sub-agent link wire', () => {
  it('round-trips every kind of message', () => {
    const msgs = [
      { type: 'beat', ...base },
      { type: 'ack', ...base, seq: 4 },
      {
        type: 'hello',
        ...base,
        incarnation: '123-1',
        running: [{ uid: 't#1', pid: 9 }],
        ended: [
          { ev: 'exited', uid: 'u#1', exitCode: 0, signal: null, t: 1, stdoutTail: 'x' },
          { ev: 'failed', uid: 'v#1', code: 'ENOENT', message: 'no such file' },
        ],
      },
      {
        type: 'ops',
        ...base,
        seq: 1,
        spawn: [
          {
            uid: 't#1',
            executable: '/bin/echo',
            args: ['hi'],
            env: { A: 'b' },
            cwd: '/tmp',
            stdoutPath: '/tmp/o',
            stderrPath: '/tmp/e',
            limits: { memoryBytes: 1024 },
          },
        ],
        kill: [{ uid: 't#1', signal: 'SIGTERM' }],
      },
      { type: 'events', ...base, started: [{ uid: 't#1', pid: 9, t: 2 }], ended: [] },
      { type: 'end', ...base },
    ] as const;
    for (const m of msgs) {
      expect(readSubAgentFrame(subAgentFrame(m as never), PEER)).toEqual({ ok: true, msg: m });
    }
  });

  it('carries the spawns the Executor prepares for a node (every field of its specs)', () => {
    const task = (output: 'stream' | 'files'): TaskRecord => ({
      uid: `t.${output}`,
      attempt: 1,
      state: 'AGENT_EXECUTING_PENDING',
      session: 's1',
      pilot: 'p1',
      sandbox: `/sb/t.${output}`,
      output,
      slots: [{ node: 'n3', cores: [0], gpus: [] }],
      description: { executable: '/bin/true', memPerRankMb: 64 },
    });
    const spawn = (['stream', 'files'] as const).map((o) => {
      const r = processKind.prepare(task(o), `/sb/t.${o}`, {
        mpirun: 'mpirun',
        asRoot: false,
        pilotSandbox: '/sb',
      });
      if (!r.ok) throw new Error(r.reason.message);
      return r.job.spec;
    });
    expect(spawn[0]).toMatchObject({ mkdir: '/sb/t.stream', recycle: true });
    const m = { type: 'ops', ...base, seq: 1, spawn, kill: [] };
    expect(readSubAgentFrame(subAgentFrame(m as never), PEER)).toEqual({ ok: true, msg: m });
  });

  it('refuses what is not msgpack, breaks the schema (naming the path), or names another party', () => {
    const bad = readSubAgentFrame(Buffer.from([0xc1]), PEER);
    expect(bad.ok).toBe(false);
    const noSeq = readSubAgentFrame(encode({ type: 'ack', ...base, seq: 0 }), PEER);
    expect(noSeq).toEqual({ ok: false, why: expect.stringMatching(/seq.*>= 1/) });
    const extra = readSubAgentFrame(encode({ type: 'beat', ...base, x: 1 }), PEER);
    expect(extra).toEqual({ ok: false, why: expect.stringContaining('x') });
    const badSignal = readSubAgentFrame(
      encode({ type: 'ops', ...base, seq: 1, spawn: [], kill: [{ uid: 'a', signal: 'SIGSTOP' }] }),
      PEER,
    );
    expect(badSignal).toEqual({ ok: false, why: expect.stringContaining('/kill/0/signal') });
    expect(readSubAgentFrame(encode({ type: 'beat', ...base, session: 's2' }), PEER)).toEqual({
      ok: false,
      why: "names session 's2'",
    });
    expect(readSubAgentFrame(encode({ type: 'beat', ...base, pilot: 'p2' }), PEER)).toEqual({
      ok: false,
      why: "names pilot 'p2'",
    });
    expect(readSubAgentFrame(encode({ type: 'beat', ...base, node: 'n4' }), PEER)).toEqual({
      ok: false,
      why: "names node 'n4' but comes from 'n3'",
    });
    // a sub-agent checks session and pilot only: it has one hub
    const sub = { session: 's1', pilot: 'p1' };
    expect(readSubAgentFrame(encode({ type: 'end', ...base, node: 'n4' }), sub).ok).toBe(true);
  });
});
