import { describe, expect, it } from '@jest/globals';
import { RouterCore, type RouterPilot } from '../../../src/router/core';
import type { RouterEffects, RouterEvent } from '../../../src/router/effects';
import { compileRouterConfig } from '../../../src/router/models';
import { FakeClock } from '../../support/fake-clock';
import { EffectRecorder } from '../../support/recorder';

// The router's decisions against recorded effects and a fake clock (llama-swap's fifo_test):
// every effect a step asks for is asserted, then expectNoMore.

type Extra = Record<string, unknown>;

/** A model of `gpus` GPUs per replica, one core. */
function model(name: string, gpus = 1, extra: Extra = {}): Extra {
  return {
    name,
    service: { executable: '/bin/srv', gpusPerRank: gpus, service: { port: 'auto' } },
    ...extra,
  };
}

function harness(
  models: Extra[],
  opts: { swap?: Extra; pilots?: RouterPilot[] } = {},
): { core: RouterCore; fx: EffectRecorder; clock: FakeClock; events: RouterEvent[] } {
  const fx = new EffectRecorder();
  const clock = new FakeClock(0);
  const events: RouterEvent[] = [];
  const effects: RouterEffects = {
    startReplica: (id, m, pilot, prefer) =>
      fx.record(
        `start ${id} ${m.name} on ${pilot}${prefer.length > 0 ? ` prefer ${prefer.join(',')}` : ''}`,
      ),
    stopReplica: (id) => fx.record(`stop ${id}`),
    dispatch: (req, id, endpoint) => fx.record(`dispatch ${req} to ${id} at ${endpoint}`),
    reject: (req, e) => fx.record(`reject ${req} ${e.status} ${e.code}: ${e.message}`),
    record: (e) => events.push(e),
  };
  const config = compileRouterConfig({
    models,
    ...(opts.swap !== undefined ? { swap: opts.swap } : {}),
  });
  const core = new RouterCore(config, effects, clock, 'r.');
  for (const p of opts.pilots ?? [{ uid: 'p0', cores: 8, gpus: 1 }]) core.onPilot(p);
  return { core, fx, clock, events };
}

describe('RouterCore: a model on demand', () => {
  it('starts a replica for the first request, holds the request until it is ready, then serves it', () => {
    const { core, fx, clock, events } = harness([model('a')]);
    fx.expectNoMore(); // nothing runs before it is asked for
    core.onRequest('q1', 'a');
    expect(fx.take()).toEqual(['start r.a.0 a on p0']);
    clock.advance(5_000);
    core.onRequest('q2', 'a');
    fx.expectNoMore(); // loading: it waits, no second replica (max 1)
    core.onReplicaReady('r.a.0', 'h:1');
    expect(fx.take()).toEqual(['dispatch q1 to r.a.0 at h:1', 'dispatch q2 to r.a.0 at h:1']);
    expect(events).toContainEqual({
      type: 'replica_ready',
      model: 'a',
      replica: 'r.a.0',
      pilot: 'p0',
      loadMs: 5_000,
    });
    core.onRequestDone('q1');
    core.onRequestDone('q2');
    fx.expectNoMore();
  });

  it('answers by alias, refuses an unknown model with 404 naming the models', () => {
    const { core, fx } = harness([model('a', 1, { aliases: ['alpha'] })]);
    core.onRequest('q1', 'alpha');
    expect(fx.take()).toEqual(['start r.a.0 a on p0']);
    core.onRequest('q2', 'b');
    expect(fx.take()).toEqual(["reject q2 404 E_UNKNOWN_MODEL: no model 'b' here (models: a)"]);
  });

  it('stops a replica idle for its TTL, and starts one again for the next request', () => {
    const { core, fx, clock } = harness([model('a', 1, { idleTtlS: 60 })]);
    core.onRequest('q1', 'a');
    core.onReplicaReady('r.a.0', 'h:1');
    clock.advance(10_000);
    core.onRequestDone('q1');
    expect(fx.take()).toEqual(['start r.a.0 a on p0', 'dispatch q1 to r.a.0 at h:1']);
    clock.advance(59_999);
    fx.expectNoMore();
    clock.advance(1);
    expect(fx.take()).toEqual(['stop r.a.0']);
    core.onReplicaEnded('r.a.0', 'canceled');
    core.onRequest('q2', 'a');
    expect(fx.take()).toEqual(['start r.a.1 a on p0']);
  });

  it('keeps one timer through a stream of requests, and stops the replica a TTL after the last', () => {
    const { core, fx, clock } = harness([model('a', 1, { idleTtlS: 60, concurrency: 4 })]);
    core.onRequest('q0', 'a');
    core.onReplicaReady('r.a.0', 'h:1');
    core.onRequestDone('q0');
    fx.take();
    for (let i = 1; i <= 100; i++) {
      clock.advance(1_000); // each request moves the idle deadline a second later
      core.onRequest(`q${i}`, 'a');
      core.onRequestDone(`q${i}`);
      expect(clock.pending()).toBe(1);
    }
    expect(fx.take()).toHaveLength(100); // each sent at once
    clock.advance(59_999);
    fx.expectNoMore(); // the timers that fired early looked, and armed again
    clock.advance(1);
    expect(fx.take()).toEqual(['stop r.a.0']);
  });

  it('keeps replicas.min running, idle or not', () => {
    const { core, fx, clock } = harness([
      model('a', 0, { idleTtlS: 1, replicas: { min: 1, max: 2 } }),
    ]);
    expect(fx.take()).toEqual(['start r.a.0 a on p0']);
    core.onReplicaReady('r.a.0', 'h:1');
    clock.advance(3_600_000);
    fx.expectNoMore();
  });
});

describe('RouterCore: the queue', () => {
  it('serves 50 requests to a loading model in order of priority, then arrival', () => {
    const { core, fx } = harness([model('a', 1, { concurrency: 1 })]);
    const order: string[] = [];
    for (let i = 0; i < 50; i++) {
      core.onRequest(`q${i}`, 'a', i % 3 === 0 ? 5 : i % 3 === 1 ? 0 : 1);
    }
    expect(fx.take()).toEqual(['start r.a.0 a on p0']);
    core.onReplicaReady('r.a.0', 'h:1');
    for (;;) {
      const got = fx.take();
      if (got.length === 0) break;
      expect(got).toHaveLength(1);
      const id = /^dispatch (q\d+)/.exec(got[0]!)![1]!;
      order.push(id);
      core.onRequestDone(id);
    }
    const want = Array.from({ length: 50 }, (_, i) => i)
      .sort((x, y) => {
        const p = (i: number): number => (i % 3 === 0 ? 5 : i % 3 === 1 ? 0 : 1);
        return p(y) - p(x) || x - y;
      })
      .map((i) => `q${i}`);
    expect(order).toEqual(want);
  });

  it('refuses past its queueLimit (503) and answers 504 past its queueTimeoutS', () => {
    const { core, fx, clock } = harness([model('a', 1, { queueLimit: 2, queueTimeoutS: 30 })]);
    core.onRequest('q1', 'a');
    core.onRequest('q2', 'a');
    core.onRequest('q3', 'a');
    expect(fx.take()).toEqual([
      'start r.a.0 a on p0',
      "reject q3 503 E_QUEUE_FULL: 2 requests wait for model 'a' already (its queueLimit)",
    ]);
    clock.advance(30_000);
    expect(fx.take()).toEqual([
      "reject q1 504 E_QUEUE_TIMEOUT: no replica of model 'a' took this request in 30 s (its queueTimeoutS)",
      "reject q2 504 E_QUEUE_TIMEOUT: no replica of model 'a' took this request in 30 s (its queueTimeoutS)",
    ]);
  });

  it('forgets a waiting request whose client went away', () => {
    const { core, fx } = harness([model('a', 1, { concurrency: 1 })]);
    core.onRequest('q1', 'a');
    core.onRequest('q2', 'a');
    core.onRequestDone('q1'); // gone while it waited
    core.onReplicaReady('r.a.0', 'h:1');
    expect(fx.take()).toEqual(['start r.a.0 a on p0', 'dispatch q2 to r.a.0 at h:1']);
  });
});

describe('RouterCore: replicas', () => {
  it('scales up with the queue to replicas.max, balancing by the fewest in flight', () => {
    const { core, fx } = harness([model('a', 1, { concurrency: 2, replicas: { max: 3 } })], {
      pilots: [{ uid: 'p0', cores: 8, gpus: 4 }],
    });
    for (let i = 0; i < 5; i++) core.onRequest(`q${i}`, 'a');
    expect(fx.take()).toEqual([
      'start r.a.0 a on p0',
      'start r.a.1 a on p0',
      'start r.a.2 a on p0',
    ]);
    core.onReplicaReady('r.a.1', 'h:1');
    expect(fx.take()).toEqual(['dispatch q0 to r.a.1 at h:1', 'dispatch q1 to r.a.1 at h:1']);
    core.onReplicaReady('r.a.0', 'h:0');
    expect(fx.take()).toEqual(['dispatch q2 to r.a.0 at h:0', 'dispatch q3 to r.a.0 at h:0']);
    core.onRequestDone('q0');
    expect(fx.take()).toEqual(['dispatch q4 to r.a.1 at h:1']);
    core.onReplicaReady('r.a.2', 'h:2');
    core.onRequest('q5', 'a');
    expect(fx.take()).toEqual(['dispatch q5 to r.a.2 at h:2']); // the one with none in flight
  });

  it('refuses at once a model no pilot can hold (503 naming the need and the pilots)', () => {
    const { core, fx } = harness([model('big', 2)]);
    core.onRequest('q1', 'big');
    expect(fx.take()).toEqual([
      "reject q1 503 E_NO_ROOM: model 'big' needs 1 rank(s) x 1 cores and 2 GPUs per replica; no pilot can ever hold it (p0 8 cores, 1 GPUs)",
    ]);
  });

  it('holds requests until a pilot comes when there is none', () => {
    const { core, fx } = harness([model('a')], { pilots: [] });
    core.onRequest('q1', 'a');
    fx.expectNoMore();
    core.onPilot({ uid: 'p1', cores: 2, gpus: 1 });
    expect(fx.take()).toEqual(['start r.a.0 a on p1']);
  });
});

describe('RouterCore: failures', () => {
  it('fails only the in-flight requests of a replica that dies; a replacement serves the rest', () => {
    const { core, fx } = harness([model('a', 1, { concurrency: 2 })]);
    for (let i = 0; i < 4; i++) core.onRequest(`q${i}`, 'a');
    core.onReplicaReady('r.a.0', 'h:1');
    expect(fx.take()).toEqual([
      'start r.a.0 a on p0',
      'dispatch q0 to r.a.0 at h:1',
      'dispatch q1 to r.a.0 at h:1',
    ]);
    core.onReplicaEnded('r.a.0', 'FAILED E_SERVICE_UNHEALTHY: 3 probes missed');
    expect(fx.take()).toEqual([
      "reject q0 502 E_BACKEND_LOST: model 'a': its replica r.a.0 ended while serving this request: FAILED E_SERVICE_UNHEALTHY: 3 probes missed",
      "reject q1 502 E_BACKEND_LOST: model 'a': its replica r.a.0 ended while serving this request: FAILED E_SERVICE_UNHEALTHY: 3 probes missed",
      'start r.a.1 a on p0',
    ]);
    core.onRequestDone('q0'); // the shell reports the answered ones done: nothing happens
    core.onReplicaReady('r.a.1', 'h:2');
    expect(fx.take()).toEqual(['dispatch q2 to r.a.1 at h:2', 'dispatch q3 to r.a.1 at h:2']);
  });

  it('sends a request a replica refused to the replacement, in its place in the queue', () => {
    const { core, fx } = harness([model('a', 1, { concurrency: 1 })]);
    core.onRequest('q1', 'a');
    core.onRequest('q2', 'a');
    core.onReplicaReady('r.a.0', 'h:1');
    expect(fx.take()).toEqual(['start r.a.0 a on p0', 'dispatch q1 to r.a.0 at h:1']);
    core.onDispatchFailed('q1', 'connect ECONNREFUSED');
    expect(fx.take()).toEqual(['stop r.a.0']); // taken to be gone: no more requests go there
    core.onReplicaEnded('r.a.0', 'FAILED E_EXIT_CODE: killed by SIGKILL');
    expect(fx.take()).toEqual(['start r.a.1 a on p0']);
    core.onReplicaReady('r.a.1', 'h:2');
    expect(fx.take()).toEqual(['dispatch q1 to r.a.1 at h:2']); // q1 first, as it came first
    for (const n of [2, 3]) {
      core.onDispatchFailed('q1', 'connect ECONNREFUSED');
      core.onReplicaEnded(`r.a.${n - 1}`, 'FAILED');
      core.onReplicaReady(`r.a.${n}`, `h:${n + 1}`);
    }
    expect(fx.take()).toEqual([
      'stop r.a.1',
      'start r.a.2 a on p0',
      'dispatch q1 to r.a.2 at h:3',
      'stop r.a.2',
      "reject q1 502 E_BACKEND_ERROR: model 'a': 3 replicas in a row refused this request, the last: connect ECONNREFUSED",
      'start r.a.3 a on p0',
      'dispatch q2 to r.a.3 at h:4',
    ]);
  });

  it('sends nothing more to a replica whose connection failed under a request', () => {
    const { core, fx } = harness([model('a', 1, { concurrency: 2 })]);
    core.onRequest('q1', 'a');
    core.onRequest('q2', 'a');
    core.onReplicaReady('r.a.0', 'h:1');
    fx.take();
    core.onReplicaBroken('r.a.0'); // q1's answer broke off: the shell failed it
    core.onRequestDone('q1');
    core.onRequest('q3', 'a');
    fx.expectNoMore(); // draining: q2 still on it, q3 waits
    core.onRequestDone('q2');
    expect(fx.take()).toEqual(['stop r.a.0']);
    core.onReplicaEnded('r.a.0', 'FAILED E_EXIT_CODE: killed by SIGKILL');
    expect(fx.take()).toEqual(['start r.a.1 a on p0']);
  });

  it('refuses the waiting requests after two starts in a row fail, with the reason', () => {
    const { core, fx } = harness([model('a')]);
    core.onRequest('q1', 'a');
    core.onReplicaEnded('r.a.0', 'FAILED E_SERVICE_EXITED: exit code 1');
    expect(fx.take()).toEqual(['start r.a.0 a on p0', 'start r.a.1 a on p0']);
    core.onReplicaEnded('r.a.1', 'FAILED E_SERVICE_EXITED: exit code 1');
    expect(fx.take()).toEqual([
      "reject q1 502 E_MODEL_FAILED: model 'a' failed to start 2 times in a row: FAILED E_SERVICE_EXITED: exit code 1",
    ]);
    core.onRequest('q2', 'a'); // a new request tries again
    expect(fx.take()).toEqual(['start r.a.2 a on p0']);
  });
});

describe('RouterCore: swapping', () => {
  it('swaps two models that do not fit together, every request answered', () => {
    const { core, fx, events } = harness([model('a'), model('b')]);
    core.onRequest('qa', 'a');
    core.onReplicaReady('r.a.0', 'h:a');
    core.onRequestDone('qa');
    expect(fx.take()).toEqual(['start r.a.0 a on p0', 'dispatch qa to r.a.0 at h:a']);
    core.onRequest('qb', 'b');
    expect(fx.take()).toEqual(['stop r.a.0']); // idle: stopped at once, b waits for its GPU
    expect(events).toContainEqual({ type: 'swap', model: 'b', stopped: ['a'] });
    core.onReplicaEnded('r.a.0', 'DONE');
    expect(fx.take()).toEqual(['start r.b.1 b on p0']);
    core.onReplicaReady('r.b.1', 'h:b');
    expect(fx.take()).toEqual(['dispatch qb to r.b.1 at h:b']);
  });

  it('counts per model what status shows: loads and their times, swaps, replicas lost, requests served', () => {
    const { core, clock } = harness([model('a'), model('b')]);
    const counts = (name: string) => {
      const m = core.snapshot().models.find((x) => x.name === name)!;
      return [m.loads, m.lastLoadMs, m.meanLoadMs, m.maxLoadMs, m.swaps, m.lost, m.served];
    };
    core.onRequest('qa', 'a');
    clock.advance(2_000);
    core.onReplicaReady('r.a.0', 'h:a');
    core.onRequestDone('qa');
    core.onRequest('qb', 'b'); // a is stopped for b: a swap of b's
    core.onReplicaEnded('r.a.0', 'DONE');
    clock.advance(4_000);
    core.onReplicaReady('r.b.1', 'h:b');
    core.onReplicaEnded('r.b.1', 'FAILED E_SERVICE_UNHEALTHY'); // lost under qb: not served
    expect(counts('a')).toEqual([1, 2_000, 2_000, 2_000, 0, 0, 1]);
    expect(counts('b')).toEqual([1, 4_000, 4_000, 4_000, 1, 1, 0]);
    core.onRequest('qb2', 'b');
    clock.advance(1_000);
    core.onReplicaReady('r.b.2', 'h:b2'); // the next one loads in 1 s
    expect(counts('b')).toEqual([2, 1_000, 2_500, 4_000, 1, 1, 0]);
  });

  it('stops every replica at its close, a draining one too, none counted lost', () => {
    const { core, fx, events } = harness([model('a', 0, { concurrency: 2 }), model('b', 0)]);
    core.onRequest('qa', 'a');
    core.onReplicaReady('r.a.0', 'h:a');
    core.onRequest('qb', 'b');
    core.onReplicaReady('r.b.1', 'h:b');
    core.unload('a'); // a drains: qa is in flight
    fx.take();
    expect(core.close()).toEqual(['r.a.0', 'r.b.1']);
    expect(fx.take()).toEqual(['stop r.a.0', 'stop r.b.1']);
    core.onReplicaEnded('r.a.0', 'CANCELED');
    core.onReplicaEnded('r.b.1', 'CANCELED');
    expect(events.filter((e) => e.type === 'replica_stopping')).toEqual([
      { type: 'replica_stopping', model: 'a', replica: 'r.a.0', why: 'unload' },
      { type: 'replica_stopping', model: 'b', replica: 'r.b.1', why: 'close' },
    ]);
    expect(core.snapshot().models.map((m) => m.lost)).toEqual([0, 0]);
  });

  it('lets the stopped model finish its in-flight requests first, within its stopGraceS', () => {
    const { core, fx, clock } = harness([model('a', 1, { stopGraceS: 10 }), model('b')]);
    core.onRequest('qa1', 'a');
    core.onRequest('qa2', 'a');
    core.onReplicaReady('r.a.0', 'h:a');
    fx.take();
    core.onRequestDone('qa1');
    core.onRequest('qb', 'b');
    fx.expectNoMore(); // a drains: qa2 still in flight
    clock.advance(10_000);
    expect(fx.take()).toEqual(['stop r.a.0']);
    core.onReplicaEnded('r.a.0', 'DONE');
    expect(fx.take()).toEqual([
      "reject qa2 502 E_BACKEND_STOPPED: model 'a': its replica r.a.0 was stopped (to make room for another model) and its stopGraceS (10 s) ran out before this request was done: DONE",
      'start r.b.1 b on p0',
    ]);
  });

  it('swaps no model away while requests that came before wait for it', () => {
    const { core, fx } = harness([model('a', 1, { concurrency: 1 }), model('b')]);
    core.onRequest('qa1', 'a');
    core.onReplicaReady('r.a.0', 'h:a');
    core.onRequest('qa2', 'a'); // waits: a is busy
    core.onRequest('qb', 'b'); // after qa2: may not stop a yet
    expect(fx.take()).toEqual(['start r.a.0 a on p0', 'dispatch qa1 to r.a.0 at h:a']);
    core.onRequestDone('qa1');
    expect(fx.take()).toEqual(['dispatch qa2 to r.a.0 at h:a']);
    core.onRequestDone('qa2');
    expect(fx.take()).toEqual(['stop r.a.0']); // now b may have the GPU
    core.onReplicaEnded('r.a.0', 'DONE');
    expect(fx.take()).toEqual(['start r.b.1 b on p0']);
  });

  it('follows a group: its members one at a time even where they would fit together', () => {
    const { core, fx } = harness([model('a', 0), model('b', 0), model('c', 0)], {
      swap: { policy: 'group', groups: [{ name: 'g', members: ['a', 'b'] }] },
    });
    core.onRequest('qa', 'a');
    core.onRequest('qc', 'c');
    core.onReplicaReady('r.a.0', 'h:a');
    core.onReplicaReady('r.c.1', 'h:c');
    core.onRequestDone('qa');
    core.onRequestDone('qc');
    expect(fx.take()).toEqual([
      'start r.a.0 a on p0',
      'start r.c.1 c on p0',
      'dispatch qa to r.a.0 at h:a',
      'dispatch qc to r.c.1 at h:c',
    ]);
    core.onRequest('qb', 'b');
    expect(fx.take()).toEqual(['stop r.a.0', 'start r.b.2 b on p0']); // c stays; b needs no GPU
  });

  it('follows a matrix of three: the set that costs least to reach', () => {
    const { core, fx } = harness([model('a', 0), model('b', 0), model('c', 0)], {
      swap: {
        policy: 'matrix',
        sets: [
          ['a', 'b'],
          ['a', 'c'],
        ],
        costs: { a: 10 },
      },
    });
    core.onRequest('qa', 'a');
    core.onRequest('qb', 'b');
    core.onReplicaReady('r.a.0', 'h:a');
    core.onReplicaReady('r.b.1', 'h:b');
    core.onRequestDone('qa');
    core.onRequestDone('qb');
    fx.take();
    core.onRequest('qc', 'c');
    expect(fx.take()).toEqual(['stop r.b.1', 'start r.c.2 c on p0']); // {a,c}: a stays
  });

  it('stops the least recently used model to make room, never a persistent one', () => {
    const { core, fx, clock } = harness([model('a'), model('b'), model('k'), model('c')], {
      pilots: [{ uid: 'p0', cores: 8, gpus: 3 }],
      swap: {
        policy: 'group',
        groups: [{ name: 'keep', members: ['k'], persistent: true, swap: false }],
      },
    });
    for (const m of ['k', 'a', 'b']) {
      core.onRequest(`q${m}`, m);
      clock.advance(1_000);
    }
    core.onReplicaReady('r.k.0', 'h:k');
    core.onReplicaReady('r.a.1', 'h:a');
    core.onReplicaReady('r.b.2', 'h:b');
    core.onRequestDone('qk'); // k: the least recently used, but persistent
    core.onRequestDone('qa');
    clock.advance(1_000);
    core.onRequestDone('qb');
    fx.take();
    core.onRequest('qc', 'c');
    expect(fx.take()).toEqual(['stop r.a.1']);
  });

  it('unloads a model on request: its replicas, and their uids to wait for', () => {
    const { core, fx } = harness([model('a', 1, { replicas: { max: 2 }, concurrency: 1 })], {
      pilots: [{ uid: 'p0', cores: 8, gpus: 2 }],
    });
    core.onRequest('q1', 'a');
    core.onRequest('q2', 'a');
    core.onReplicaReady('r.a.0', 'h:0');
    core.onReplicaReady('r.a.1', 'h:1');
    core.onRequestDone('q1');
    fx.take();
    expect(core.unload('a')).toEqual(['r.a.0', 'r.a.1']);
    expect(fx.take()).toEqual(['stop r.a.0']); // r.a.1 still serves q2
    core.onRequestDone('q2');
    expect(fx.take()).toEqual(['stop r.a.1']);
  });
});

describe("RouterCore: make-before-break at a pilot's end", () => {
  it('places a replica on the pilot with the most time left', () => {
    const { core, fx } = harness([model('a')], {
      pilots: [
        { uid: 'p0', cores: 8, gpus: 1, drainAtMs: 600_000 },
        { uid: 'p1', cores: 8, gpus: 1 },
      ],
    });
    core.onRequest('q1', 'a');
    expect(fx.take()).toEqual(['start r.a.0 a on p1']);
  });

  it('starts a replacement on a pilot with time left, switches when it is ready, lets the old one finish', () => {
    const { core, fx, clock } = harness([model('a', 1, { handoffLeadS: 120, concurrency: 4 })], {
      pilots: [{ uid: 'p0', cores: 8, gpus: 1, drainAtMs: 600_000 }],
    });
    core.onRequest('q1', 'a');
    core.onReplicaReady('r.a.0', 'h:0');
    expect(fx.take()).toEqual(['start r.a.0 a on p0', 'dispatch q1 to r.a.0 at h:0']);
    core.onPilot({ uid: 'p1', cores: 8, gpus: 1, drainAtMs: 7_200_000 });
    clock.advance(479_999);
    fx.expectNoMore();
    clock.advance(1); // 120 s before p0 drains
    expect(fx.take()).toEqual(['start r.a.1 a on p1']);
    core.onRequest('q2', 'a');
    expect(fx.take()).toEqual(['dispatch q2 to r.a.0 at h:0']); // the old one serves meanwhile
    core.onReplicaReady('r.a.1', 'h:1');
    core.onRequest('q3', 'a');
    expect(fx.take()).toEqual(['dispatch q3 to r.a.1 at h:1']);
    core.onRequestDone('q1');
    fx.expectNoMore(); // q2 still in flight on the old one
    core.onRequestDone('q2');
    expect(fx.take()).toEqual(['stop r.a.0']);
    core.onReplicaEnded('r.a.0', 'DONE');
    fx.expectNoMore(); // no reject: nothing failed
  });

  it('tries the handoff again when the replacement fails to start', () => {
    const { core, fx, clock } = harness([model('a', 1, { handoffLeadS: 60 })], {
      pilots: [
        { uid: 'p0', cores: 8, gpus: 1, drainAtMs: 100_000 },
        { uid: 'p1', cores: 8, gpus: 1, drainAtMs: 100_000 },
      ],
    });
    core.onRequest('q1', 'a');
    core.onReplicaReady('r.a.0', 'h:0');
    core.onRequestDone('q1');
    core.onPilot({ uid: 'p2', cores: 8, gpus: 1 });
    clock.advance(40_000);
    expect(fx.take()).toEqual([
      'start r.a.0 a on p0',
      'dispatch q1 to r.a.0 at h:0',
      'start r.a.1 a on p2',
    ]);
    core.onReplicaEnded('r.a.1', 'FAILED E_SERVICE_EXITED: exit code 1');
    expect(fx.take()).toEqual(['start r.a.2 a on p2']);
  });

  it('keeps serving on the draining pilot when no other has time left', () => {
    const { core, fx, clock } = harness([model('a', 1, { handoffLeadS: 60 })], {
      pilots: [{ uid: 'p0', cores: 8, gpus: 1, drainAtMs: 100_000 }],
    });
    core.onRequest('q1', 'a');
    core.onReplicaReady('r.a.0', 'h:0');
    core.onRequestDone('q1');
    fx.take();
    clock.advance(50_000);
    core.onRequest('q2', 'a');
    expect(fx.take()).toEqual(['dispatch q2 to r.a.0 at h:0']);
  });
});

describe('RouterCore: placement by node', () => {
  const node = (name: string, gpus: number, labels: Record<string, string> = {}) => ({
    name,
    cores: 8,
    gpus,
    labels,
  });
  const A: RouterPilot = { uid: 'pA', cores: 8, gpus: 1, nodes: [node('a1', 1, { gpu: 'l4' })] };
  const B: RouterPilot = {
    uid: 'pB',
    cores: 16,
    gpus: 2,
    nodes: [node('b1', 1, { gpu: 'a100' }), node('b2', 1, { gpu: 'l4' })],
  };

  it('places a model with a selector only on a pilot with a node it selects', () => {
    const { core, fx } = harness(
      [
        model('big', 1, {
          service: { ...(model('x').service as Extra), placement: { selector: { gpu: 'a100' } } },
        }),
      ],
      { pilots: [A, B] },
    );
    core.onRequest('q1', 'big');
    expect(fx.take()).toEqual(['start r.big.0 big on pB']);
  });

  it('refuses a model no pilot has a node for (503 naming why), not queueing it forever', () => {
    const { core, fx } = harness(
      [
        model('big', 1, {
          service: { ...(model('x').service as Extra), placement: { node: 'zz' } },
        }),
      ],
      { pilots: [A, B] },
    );
    core.onRequest('q1', 'big');
    expect(fx.take()).toEqual([
      "reject q1 503 E_NO_ROOM: model 'big' needs 1 rank(s) x 1 cores and 1 GPUs per replica on node 'zz'; " +
        'no pilot can ever hold it (pA 8 cores, 1 GPUs: a1 (8 cores, 1 GPUs, gpu=l4); ' +
        'pB 16 cores, 2 GPUs: b1 (8 cores, 1 GPUs, gpu=a100), b2 (8 cores, 1 GPUs, gpu=l4))',
    ]);
  });

  it('counts a model of two GPUs on one rank as fitting no pilot whose nodes have one each', () => {
    const { core, fx } = harness([model('two', 2)], { pilots: [B] });
    core.onRequest('q1', 'two');
    expect(fx.take()[0]).toMatch(/^reject q1 /);
  });

  it('starts a model again where it was ready before: that pilot first, those nodes preferred', () => {
    const { core, fx, clock } = harness([model('a', 1, { idleTtlS: 60 })], { pilots: [A, B] });
    core.onRequest('q1', 'a');
    // the first goes where it displaces nothing and has the most time; both even: tightest, pA
    expect(fx.take()).toEqual(['start r.a.0 a on pA']);
    core.onReplicaReady('r.a.0', 'h:1', 'a1');
    core.onRequestDone('q1');
    expect(fx.take()).toEqual(['dispatch q1 to r.a.0 at h:1']);
    clock.advance(60_000);
    expect(fx.take()).toEqual(['stop r.a.0']);
    core.onReplicaEnded('r.a.0', 'canceled');
    expect(core.snapshot().models[0]!.replicas).toEqual([]);
    core.onRequest('q2', 'a');
    expect(fx.take()).toEqual(['start r.a.1 a on pA prefer a1']);
  });

  it('prefers the pilot it ran on over a tighter fit', () => {
    const { core, fx, clock } = harness([model('a', 1, { idleTtlS: 60 })], { pilots: [B] });
    core.onRequest('q1', 'a');
    core.onReplicaReady('r.a.0', 'h:1', 'b2');
    core.onRequestDone('q1');
    expect(fx.take()).toEqual(['start r.a.0 a on pB', 'dispatch q1 to r.a.0 at h:1']);
    expect(core.snapshot().models[0]!.replicas.map((r) => r.node)).toEqual(['b2']);
    clock.advance(60_000);
    core.onReplicaEnded('r.a.0', 'canceled');
    expect(fx.take()).toEqual(['stop r.a.0']);
    core.onPilot(A); // a tighter fit, where it never ran
    core.onRequest('q2', 'a');
    expect(fx.take()).toEqual(['start r.a.1 a on pB prefer b2']);
  });
});
