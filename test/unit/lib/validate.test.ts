import { describe, expect, it } from '@jest/globals';
import { ValidationError, type ValidationIssue } from '../../../src/errors';
import {
  describeErrors,
  parseControlMessage,
  parseNotification,
  parseNotificationBulk,
  parsePilotDescription,
  parseTaskDescription,
  parseWorkload,
} from '../../../src/lib/validate';

/** Runs `fn`, expects a ValidationError and returns it. */
function rejection(fn: () => unknown): ValidationError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    return e as ValidationError;
  }
  throw new Error('expected a ValidationError, got none');
}

const text = (issues: readonly ValidationIssue[]): string[] =>
  issues.map((i) => `${i.path} ${i.message}`);

describe('parseTaskDescription', () => {
  it('accepts a minimal description and returns it', () => {
    const d = { executable: '/bin/true' };
    expect(parseTaskDescription(d)).toBe(d);
  });

  it('accepts a full description', () => {
    const d = {
      uid: 'task.000001',
      name: 'hello',
      mode: 'executable',
      executable: '/bin/echo',
      arguments: ['hi'],
      environment: { FOO: 'bar' },
      workdir: '/tmp',
      ranks: 2,
      coresPerRank: 1,
      gpusPerRank: 0.5,
      memPerRankMb: 128,
      launch: 'fork',
      priority: -1,
      timeoutS: 1.5,
      pilot: 'pilot.0000',
    };
    expect(parseTaskDescription(d)).toEqual(d);
  });

  it('rejects an unknown field, naming the object and the property', () => {
    const err = rejection(() => parseTaskDescription({ executable: '/bin/true', foo: 1 }));
    expect(err.issues).toEqual([{ path: '/', message: "must not have property 'foo'" }]);
    expect(err.message).toContain("/ must not have property 'foo'");
  });

  it('names the path of a wrong type inside an array', () => {
    const err = rejection(() =>
      parseTaskDescription({ executable: '/bin/true', arguments: ['a', 2] }),
    );
    expect(err.issues).toEqual([{ path: '/arguments/1', message: 'must be string' }]);
    expect(err.message).toBe('invalid TaskDescription: /arguments/1 must be string');
  });

  it("says what a task's mode takes and rules out (function tasks)", () => {
    const fn = { module: '/m.js' };
    const cases: [unknown, string[]][] = [
      [
        { mode: 'function', function: fn, executable: '/bin/true' },
        ["/executable must not be given with this task's mode"],
      ],
      [{ mode: 'function' }, ["/ must have required property 'function'"]],
      [
        { function: fn, executable: '/bin/true' },
        ["/function must not be given with this task's mode"],
      ],
      [{ mode: 'function', function: fn, ranks: 2 }, ['/ranks must be 1']],
      [{}, ["/ must have required property 'executable'"]],
      [
        { mode: 'function', function: { module: '' } },
        ['/function/module must NOT have fewer than 1 characters'],
      ],
    ];
    for (const [d, issues] of cases) {
      expect(text(rejection(() => parseTaskDescription(d)).issues)).toEqual(issues);
    }
    expect(
      parseTaskDescription({ mode: 'function', function: { ...fn, args: [1, { a: [] }] } }),
    ).toBeDefined();
  });

  it("checks a service's liveness: a probe, a port for it, sizes in range", () => {
    const svc = { mode: 'service' as const, executable: 'srv' };
    const issues = (service: unknown): string[] =>
      text(rejection(() => parseTaskDescription({ ...svc, service })).issues);
    expect(issues({ liveness: { tcp: true } })).toContain(
      "/service must have required property 'port'",
    );
    expect(issues({ port: 'auto', liveness: { intervalS: 1 } })).toContain(
      "/service/liveness must have required property 'tcp'",
    );
    expect(issues({ port: 'auto', liveness: { http: '/h', failures: 0 } })).toContain(
      '/service/liveness/failures must be >= 1',
    );
    expect(issues({ port: 'auto', liveness: true })).toContain('/service/liveness must be object');
    for (const liveness of [false, { http: '/h', intervalS: 0.5, failures: 2, timeoutS: 1 }]) {
      expect(parseTaskDescription({ ...svc, service: { port: 80, liveness } })).toBeDefined();
    }
  });

  it('lists the allowed values of an enum', () => {
    const err = rejection(() => parseTaskDescription({ executable: '/bin/true', mode: 'bogus' }));
    expect(text(err.issues)).toEqual(['/mode must be one of "executable", "function", "service"']);
    const launch = rejection(() => parseTaskDescription({ executable: 'x', launch: 'ssh' }));
    expect(text(launch.issues)).toEqual(['/launch must be one of "fork", "mpirun", "srun"']);
  });

  it('rejects ranks: 0 with the minimum', () => {
    const err = rejection(() => parseTaskDescription({ executable: '/bin/true', ranks: 0 }));
    expect(err.issues).toEqual([{ path: '/ranks', message: 'must be >= 1' }]);
  });

  it('names a missing required property', () => {
    const err = rejection(() => parseTaskDescription({}));
    expect(text(err.issues)).toEqual(["/ must have required property 'executable'"]);
  });

  it('rejects something that is not an object', () => {
    expect(text(rejection(() => parseTaskDescription('x')).issues)).toEqual(['/ must be object']);
    expect(text(rejection(() => parseTaskDescription(null)).issues)).toEqual(['/ must be object']);
  });

  it('reports every problem at once, each with its own path', () => {
    const err = rejection(() =>
      parseTaskDescription({ executable: '', ranks: 1.5, timeoutS: 0, bar: true }),
    );
    expect(text(err.issues).sort()).toEqual(
      [
        "/ must not have property 'bar'",
        '/executable must NOT have fewer than 1 characters',
        '/ranks must be integer',
        '/timeoutS must be > 0',
      ].sort(),
    );
  });

  it('names a bad environment variable name once, with the pattern', () => {
    const err = rejection(() =>
      parseTaskDescription({ executable: 'x', environment: { '1A': 'x', B: 2 } }),
    );
    expect(text(err.issues)).toEqual([
      `/environment property name '1A' must match pattern "^[A-Za-z_][A-Za-z0-9_]*$"`,
      '/environment/B must be string',
    ]);
  });
});

describe('parsePilotDescription', () => {
  it('accepts a local pilot', () => {
    expect(parsePilotDescription({ resource: 'local', cores: 2 })).toEqual({
      resource: 'local',
      cores: 2,
    });
  });

  it('rejects an unknown resource, listing the allowed values', () => {
    const err = rejection(() => parsePilotDescription({ resource: 'cloud' }));
    const allowed = 'must be one of "local", "slurm", "pbs", "lsf"';
    expect(err.issues).toEqual([{ path: '/resource', message: allowed }]);
    expect(err.message).toBe(`invalid PilotDescription: /resource ${allowed}`);
  });

  it('names nested paths', () => {
    const err = rejection(() =>
      parsePilotDescription({ resource: 'local', agent: { spawners: 0, logLevel: 'loud' } }),
    );
    expect(text(err.issues).sort()).toEqual([
      '/agent/logLevel must be one of "error", "warn", "info", "debug"',
      '/agent/spawners must be >= 1',
    ]);
  });

  it('refuses agent.executors (removed: it was accepted and did nothing), naming its path', () => {
    const err = rejection(() =>
      parsePilotDescription({ resource: 'local', agent: { executors: 2, spawners: 2 } }),
    );
    expect(text(err.issues)).toEqual(["/agent must not have property 'executors'"]);
    expect(err.message).toBe("invalid PilotDescription: /agent must not have property 'executors'");
    // a workload file's pilot, with its place in the file
    const w = { pilots: [{ resource: 'local', agent: { executors: 2 } }], tasks: [] };
    expect(text(rejection(() => parseWorkload(w)).issues)).toEqual([
      "/pilots/0/agent must not have property 'executors'",
    ]);
  });
});

describe('parseWorkload', () => {
  it('accepts a string "$schema" at the top only (editors add it)', () => {
    const w = { $schema: './workload.schema.json', tasks: [{ executable: '/bin/true' }] };
    expect(parseWorkload(w)).toEqual(w);
    expect(text(rejection(() => parseWorkload({ $schema: 1, tasks: [] })).issues)).toEqual([
      '/$schema must be string',
    ]);
    const nested = { tasks: [{ $schema: 'x', executable: '/bin/true' }] };
    expect(text(rejection(() => parseWorkload(nested)).issues)).toEqual([
      "/tasks/0 must not have property '$schema'",
    ]);
  });
});

describe('parseControlMessage', () => {
  it('accepts each kind of message', () => {
    const ok = [
      { type: 'cancel_tasks', session: 's', uids: ['t1'] },
      { type: 'shutdown_agent', session: 's', pilot: 'p1', final: 'DONE' },
      {
        type: 'agent_ready',
        session: 's',
        pilot: 'p1',
        nodes: [{ name: 'n0', cores: 2, gpus: 0 }],
      },
      { type: 'agent_final', session: 's', pilot: 'p1', final: 'FAILED', message: 'lost' },
      { type: 'probe', from: 'c', nonce: 'x' },
      { type: 'heartbeat', session: 's', ts: 1 },
    ];
    for (const m of ok) expect(parseControlMessage(m)).toBe(m);
  });

  it('names /uids/0 for a cancel with a number uid, and nothing from the other kinds', () => {
    const err = rejection(() =>
      parseControlMessage({ type: 'cancel_tasks', session: 's', uids: [1] }),
    );
    expect(err.issues).toEqual([{ path: '/uids/0', message: 'must be string' }]);
    expect(err.message).toBe('invalid ControlMessage: /uids/0 must be string');
  });

  it('reports only the problems of the kind named by type', () => {
    const err = rejection(() =>
      parseControlMessage({
        type: 'shutdown_agent',
        session: 's',
        pilot: 'p',
        final: 'X',
        extra: 1,
      }),
    );
    expect(text(err.issues).sort()).toEqual([
      "/ must not have property 'extra'",
      '/final must be one of "DONE", "FAILED", "CANCELED"',
    ]);
    const nested = rejection(() =>
      parseControlMessage({
        type: 'agent_ready',
        session: 's',
        pilot: 'p',
        nodes: [{ name: 'n', cores: -1 }],
      }),
    );
    expect(text(nested.issues).sort()).toEqual([
      "/nodes/0 must have required property 'gpus'",
      '/nodes/0/cores must be >= 0',
    ]);
  });

  it('lists the known types when type matches none', () => {
    const err = rejection(() => parseControlMessage({ type: 'reboot' }));
    expect(text(err.issues)).toEqual([
      '/type must be one of "cancel_tasks", "service_gone", "shutdown_agent", "agent_ready", "agent_final", "probe", "heartbeat", "client_resumed", "agent_heartbeat", "agent_waits", "agent_returns", "agent_warning"',
    ]);
  });

  it("takes an agent's heartbeat with the parts it has not heard from, at most 1000", () => {
    const beat = { type: 'agent_heartbeat', session: 's', pilot: 'p' };
    const silent = [{ part: 'sub-agent n3', since: 1_700_000_000_000 }];
    expect(parseControlMessage({ ...beat, silent })).toEqual({ ...beat, silent });
    const many = Array.from({ length: 1001 }, (_, i) => ({ part: `sub-agent n${i}`, since: 1 }));
    expect(text(rejection(() => parseControlMessage({ ...beat, silent: many })).issues)).toEqual([
      '/silent must NOT have more than 1000 items',
    ]);
    const bad = rejection(() =>
      parseControlMessage({ ...beat, silent: [{ part: '', since: -1, node: 'n3' }] }),
    );
    expect(text(bad.issues).sort()).toEqual([
      "/silent/0 must not have property 'node'",
      '/silent/0/part must NOT have fewer than 1 characters',
      '/silent/0/since must be >= 0',
    ]);
  });

  it('says once that type is missing', () => {
    const err = rejection(() => parseControlMessage({ uids: [] }));
    expect(text(err.issues)).toEqual(["/ must have required property 'type'"]);
  });

  it('rejects something that is not an object', () => {
    const err = rejection(() => parseControlMessage(42));
    expect(text(err.issues)).toContain('/ must be object');
    expect(new Set(text(err.issues)).size).toBe(err.issues.length);
  });
});

describe('parseNotification and parseNotificationBulk', () => {
  const n = { kind: 'task', uid: 't1', attempt: 1, state: 'NEW', ts: 1, component: 'TaskManager' };

  it('accepts a bulk of notifications', () => {
    expect(parseNotificationBulk([n, { ...n, state: 'DONE' }])).toHaveLength(2);
    expect(parseNotification(n)).toBe(n);
  });

  it('rejects an empty bulk', () => {
    const err = rejection(() => parseNotificationBulk([]));
    expect(err.issues).toEqual([{ path: '/', message: 'must NOT have fewer than 1 items' }]);
  });

  it('names the item and field of a bad notification in a bulk', () => {
    const err = rejection(() => parseNotificationBulk([n, { ...n, attempt: 0, kind: 'job' }]));
    expect(text(err.issues).sort()).toEqual([
      '/1/attempt must be >= 1',
      '/1/kind must be one of "task", "pilot", "service"',
    ]);
  });
});

describe('ValidationError', () => {
  it('has the code E_VALIDATION, a name and the issues', () => {
    const err = rejection(() => parseTaskDescription({ executable: 1 }));
    expect(err.code).toBe('E_VALIDATION');
    expect(err.name).toBe('ValidationError');
    expect(err).toBeInstanceOf(Error);
    expect(err.issues).toEqual([{ path: '/executable', message: 'must be string' }]);
  });
});

describe('describeErrors', () => {
  it('returns no issues for no errors', () => {
    expect(describeErrors(null)).toEqual([]);
    expect(describeErrors(undefined)).toEqual([]);
    expect(describeErrors([])).toEqual([]);
  });

  it('uses / for the root and keeps ajv messages it does not rewrite', () => {
    expect(
      describeErrors([
        {
          keyword: 'type',
          instancePath: '',
          schemaPath: '#/type',
          params: { type: 'object' },
          message: 'must be object',
        },
        {
          keyword: 'const',
          instancePath: '/type',
          schemaPath: '#/properties/type/const',
          params: { allowedValue: 'probe' },
          message: 'must be equal to constant',
        },
      ]),
    ).toEqual([
      { path: '/', message: 'must be object' },
      { path: '/type', message: 'must be "probe"' },
    ]);
  });
});
