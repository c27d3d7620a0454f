import { describe, expect, it } from '@jest/globals';
import Ajv from 'ajv';
import type { ControlContext, ControlRuntime } from '../../../../src/client/control/context';
import { dispatchControl } from '../../../../src/client/control/dispatch';
import {
  CONTROL_HANDLERS,
  CONTROL_OPS,
  CONTROL_SCHEMAS,
} from '../../../../src/client/control/handlers';
import type { ManagedTasks, Managers } from '../../../../src/client/control/managers';
import type {
  ControlOp,
  ControlReply,
  ControlRequestOf,
  ControlResults,
} from '../../../../src/client/control/protocol';
import { Pilot } from '../../../../src/client/pilot';
import { Task } from '../../../../src/client/task';
import { TaskRegistry } from '../../../../src/client/tasks/registry';
import type { RouterStatus, WaitReason } from '../../../../src/generated';
import { parseControlReply } from '../../../../src/lib/validate';
import controlReply from '../../../../schemas/control-reply.schema.json';
import controlRequest from '../../../../schemas/control-request.schema.json';
import { FakeClock } from '../../../support/fake-clock';
import { linesLogger } from '../../../support/lines-logger';

const HELD: WaitReason = {
  kind: 'pilot',
  message: 'no pilot it may use has room',
  component: 'ManagerScheduler',
  ts: 5,
};

/** A model router of the session, as it tells how it stands. */
const ROUTER: RouterStatus = {
  url: 'http://127.0.0.1:8080',
  models: [
    {
      name: 'llm',
      queued: 2,
      inFlight: 1,
      lastLoadMs: 1_200,
      loads: 2,
      meanLoadMs: 1_100,
      maxLoadMs: 1_200,
      swaps: 1,
      lost: 0,
      served: 40,
      replicas: [
        {
          id: 'r.llm.1',
          state: 'ready',
          pilot: 'pilot.0000',
          node: 'n1',
          endpoint: 'n1:8000',
          inFlight: 1,
        },
      ],
    },
  ],
};

/** The pilot's agent is silent, and a sub-agent it reports was silent before. */
const LIVENESS = {
  state: 'unknown' as const,
  since: 900,
  silentParts: [{ part: 'sub-agent n3', since: 400 }],
};

/**
 * A session with no socket, no store and no agents: three tasks (a running, b held by the
 * ManagerScheduler, c done), one pilot, one TaskManager that records what it is asked to cancel.
 */
function session(opts: { closing?: boolean; cancel?: () => Promise<void> } = {}) {
  const tasks = new TaskRegistry();
  const a = new Task('a', { executable: '/bin/true', name: 'sim' });
  const b = new Task('b', { executable: '/bin/true' });
  const c = new Task('c', { executable: '/bin/true' });
  a.state = 'AGENT_EXECUTING';
  a.pilot = 'pilot.0000';
  a.record('AGENT_EXECUTING', 1, false, 1_000);
  b.state = 'TMGR_SCHEDULING';
  b.record('TMGR_SCHEDULING', 1, false, 2_000);
  c.state = 'DONE';
  tasks.add([a, b, c]);
  const pilot = new Pilot('pilot.0000', { resource: 'local' }, 4, 0, '/s/pilot.0000');
  pilot.state = 'PMGR_ACTIVE';
  pilot.setLiveness(LIVENESS);
  const canceled: string[][] = [];
  const tmgr: ManagedTasks = {
    get: (uid) => tasks.get(uid),
    cancelTasks: (uids = []) => {
      canceled.push(uids);
      return opts.cancel?.() ?? Promise.resolve();
    },
  };
  const managers: Managers = {
    pilots: new Set([{ get: (u) => (u === pilot.uid ? pilot : undefined), list: () => [pilot] }]),
    tasks: new Set([tmgr]),
    routers: new Set([{ status: () => ROUTER }]),
  };
  const log = linesLogger();
  const runtime: ControlRuntime = {
    uid: 'pf.test',
    dir: '/sessions/pf.test',
    tasks,
    log,
    clock: new FakeClock(),
    pipeline: { whyWaiting: (uid) => (uid === 'b' ? HELD : undefined) },
    links: {
      waits: { get: () => undefined, estimate: () => undefined },
      // the agent of pilot.0000, as its file channel answers a read
      files: {
        sandbox: {
          ask: (pilot, body) =>
            pilot === 'pilot.0000' && body.op === 'read'
              ? Promise.resolve({
                  header: { req: 0, ok: true, session: 'pf.test', pilot, size: 3 },
                  data: Buffer.from('hi\n'),
                })
              : Promise.reject(new Error(`asked ${pilot} ${body.op}`)),
        },
      },
    },
  };
  const ctx: ControlContext = { runtime, managers, closing: () => opts.closing === true };
  return { ctx, canceled, warned: log.warned };
}

const EXPLAINED_B = {
  uid: 'b',
  state: 'TMGR_SCHEDULING',
  attempt: 1,
  since: 2_000,
  waiting: HELD,
  noEstimate: "no estimate until it reaches a pilot's agent, whose plan gives it",
} as const;

/**
 * One case per op, typed by the table: an op without a case here does not compile, and the
 * test below fails on one the table has and this does not.
 */
const CASES: {
  [Op in ControlOp]: {
    request: ControlRequestOf<Op>;
    result: ControlResults[Op];
    canceled?: string[][];
  };
} = {
  status: {
    request: { op: 'status', id: 7, pending: 5 },
    result: {
      session: 'pf.test',
      dir: '/sessions/pf.test',
      state: 'live',
      pid: process.pid,
      // the running task 'a' holds one of its cores
      pilots: [
        {
          uid: 'pilot.0000',
          state: 'PMGR_ACTIVE',
          resource: 'local',
          cores: 4,
          gpus: 0,
          busyCores: 1,
          busyGpus: 0,
          liveness: LIVENESS,
        },
      ],
      counts: { AGENT_EXECUTING: 1, TMGR_SCHEDULING: 1, DONE: 1 },
      total: 3,
      failures: {},
      running: [{ uid: 'a', name: 'sim', pilot: 'pilot.0000', since: 1_000 }],
      runningTotal: 1,
      pending: [EXPLAINED_B],
      pendingTotal: 1,
      routers: [ROUTER],
    },
  },
  explain: { request: { op: 'explain', id: 'x', uid: 'b' }, result: EXPLAINED_B },
  cancel: {
    request: { op: 'cancel', uids: ['b', 'c', 'zzz', 'b'] },
    result: { canceled: ['b'], unknown: ['zzz'], final: ['c'] },
    canceled: [['b']],
  },
  sandbox: {
    request: { op: 'sandbox', pilot: 'pilot.0000', look: 'read', path: '/s/pilot.0000/x' },
    result: { size: 3, data: Buffer.from('hi\n').toString('base64') },
  },
};

describe('the control handler table', () => {
  it('has a handler for every op of the request schema, and a case here for every handler', () => {
    const ops = controlRequest.oneOf.map((b) => b.properties.op.const);
    expect([...CONTROL_OPS]).toEqual(ops);
    expect(Object.keys(CONTROL_HANDLERS)).toEqual(ops);
    expect(Object.keys(CASES).sort()).toEqual([...ops].sort());
  });

  it("answers each op with the reply schema's result of that op, and nothing else", () => {
    const ops = controlRequest.oneOf.map((b) => b.properties.op.const);
    expect(Object.keys(controlReply.definitions).filter((d) => /^[a-z]/.test(d))).toEqual(ops);
    const answer = controlReply.oneOf.find((b) => 'result' in b.properties)!;
    const results = (
      answer.properties as typeof answer.properties & { result: { anyOf: { $ref: string }[] } }
    ).result.anyOf.map((r) => r.$ref);
    expect(results).toEqual(ops.map((op) => `#/definitions/${op}`));
  });

  describe.each(CONTROL_OPS)('%s', (op) => {
    const c = CASES[op];

    it('is answered without a socket, its result as its reply schema says', async () => {
      const { ctx, canceled, warned } = session();
      const reply = await dispatchControl(ctx, c.request);
      expect(reply).toEqual({
        ...('id' in c.request ? { id: c.request.id } : {}),
        ok: true,
        result: c.result,
      });
      expect(parseControlReply(op, reply)).toBe(reply);
      expect(canceled).toEqual(c.canceled ?? []);
      expect(warned()).toEqual([]);
    });

    it("is described by schemas a server on another transport can register ($ref's)", async () => {
      const handler = CONTROL_HANDLERS[op];
      const ajv = new Ajv({ strict: true, allowUnionTypes: true });
      ajv.addKeyword({ keyword: 'tsType', schemaType: 'string' });
      ajv.addSchema([...CONTROL_SCHEMAS]);
      expect(ajv.validate(handler.request, c.request)).toBe(true);
      expect(ajv.validate(handler.request, { ...c.request, extra: 1 })).toBe(false);
      const { ctx } = session();
      expect(ajv.validate(handler.reply, await handler.handle(ctx, c.request as never))).toBe(true);
    });

    it(
      CONTROL_HANDLERS[op].refusedWhileClosing
        ? 'is refused with E_CLOSING while the session closes'
        : 'is answered while the session closes',
      async () => {
        const { ctx, canceled } = session({ closing: true });
        const reply = await dispatchControl(ctx, c.request);
        if (CONTROL_HANDLERS[op].refusedWhileClosing) {
          expect(reply).toMatchObject({ ok: false, error: { code: 'E_CLOSING' } });
          expect(canceled).toEqual([]);
        } else expect(reply.ok).toBe(true);
      },
    );
  });
});

describe('dispatchControl', () => {
  const ask = (input: unknown, opts?: Parameters<typeof session>[0]) => {
    const s = session(opts);
    return dispatchControl(s.ctx, input).then((reply) => ({ reply, ...s }));
  };

  it('says the session is closing in status', async () => {
    const { reply } = await ask({ op: 'status' }, { closing: true });
    expect(reply).toMatchObject({ ok: true, result: { state: 'closing' } });
  });

  it('refuses a request the schema does not take with E_VALIDATION, naming each issue, id echoed', async () => {
    const { reply, warned } = await ask({ op: 'cancel', id: 3, uids: [1] });
    expect(reply).toEqual({
      id: 3,
      ok: false,
      error: {
        code: 'E_VALIDATION',
        message: 'invalid ControlRequest: /uids/0 must be string',
        issues: [{ path: '/uids/0', message: 'must be string' }],
      },
    });
    expect(warned()).toEqual([]);
  });

  it.each([
    [{ op: 'restart' }, '/op must be one of "status", "explain", "cancel", "sandbox"'],
    [42, '/ must be object'],
    [null, '/ must be object'],
  ])('refuses %j with E_VALIDATION', async (input, issue) => {
    const { reply } = await ask(input);
    expect(reply).toMatchObject({ ok: false, error: { code: 'E_VALIDATION' } });
    const error = (reply as Extract<ControlReply, { ok: false }>).error;
    expect(error.issues?.map((i) => `${i.path} ${i.message}`)).toContain(issue);
  });

  it("answers a handler that fails with its error's code, or E_INTERNAL, and logs it", async () => {
    const coded = Object.assign(new Error('the store cannot write'), {
      code: 'E_STORE_UNWRITABLE',
    });
    const a = await ask({ op: 'cancel', uids: ['b'] }, { cancel: () => Promise.reject(coded) });
    expect(a.reply).toEqual({
      ok: false,
      error: { code: 'E_STORE_UNWRITABLE', message: 'the store cannot write' },
    });
    expect(a.warned()).toEqual(['control request failed']);
    const b = await ask(
      { op: 'cancel', uids: ['b'] },
      { cancel: () => Promise.reject(new Error('x')) },
    );
    expect(b.reply).toEqual({ ok: false, error: { code: 'E_INTERNAL', message: 'x' } });
  });

  it('answers explain of a uid the session does not have with null', async () => {
    const { reply } = await ask({ op: 'explain', uid: 'nope' });
    expect(reply).toEqual({ ok: true, result: null });
  });
});

describe('parseControlReply (the CLI checks what it is told)', () => {
  it('refuses a result that is not the asked op’s, naming where', () => {
    const status = { ok: true, result: CASES.cancel.result };
    expect(() => parseControlReply('status', status)).toThrow(
      "invalid ControlReply to 'status': /result must have required property 'session'",
    );
    expect(parseControlReply('cancel', status)).toBe(status);
  });

  it('refuses an envelope that is neither an answer nor an error', () => {
    expect(() => parseControlReply('status', { ok: true })).toThrow(/invalid ControlReply/);
    const refused = { ok: false, error: { code: 'E_CLOSING', message: 'closing' } };
    expect(parseControlReply('cancel', refused)).toBe(refused);
  });
});
