import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { runtimeOf } from '../client/runtime/runtime';
import { registerRouterMetrics } from '../router/metrics';
import type { RouterParts } from '../router/router';
import { TASK_STATES } from '../states/task-model';
import type { ServiceContext } from './context';

// GET /metrics in the Prometheus text format (prom-client): the session's tasks by state (their
// sum: what was submitted), what ended (its rate: throughput), the queue of each pilot, each
// pilot's cores and those its running tasks hold (utilization), the HTTP requests by route and
// status, and the process's own.
// Gauges are read from the session when scraped: nothing is counted twice.

const RUNNING = new Set(['AGENT_EXECUTING_PENDING', 'AGENT_EXECUTING']);
/** Ran, not yet final: staging out. */
const AFTER_RUN = new Set([
  'AGENT_STAGING_OUTPUT_PENDING',
  'AGENT_STAGING_OUTPUT',
  'TMGR_STAGING_OUTPUT_PENDING',
  'TMGR_STAGING_OUTPUT',
]);

export function metricsRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  router?: RouterParts,
): void {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'pilotfish_' });
  if (router !== undefined) registerRouterMetrics(registry, router);
  const tasks = runtimeOf(ctx.session).tasks;
  new Gauge({
    name: 'pilotfish_tasks',
    help: 'Tasks of the session, by state',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const counts = new Map<string, number>(TASK_STATES.map((s) => [s, 0]));
      for (const t of tasks.values()) counts.set(t.state, (counts.get(t.state) ?? 0) + 1);
      this.reset();
      for (const [state, n] of counts) this.set({ state }, n);
    },
  });
  // counted when scraped, from the tasks' states, as the gauges are: a state callback would make
  // every notification one a callback heard, each a write of the resume counters (~12 us)
  const finalsNow = (): Map<string, number> => {
    const n = new Map<string, number>();
    for (const t of tasks.values()) if (t.final) n.set(t.state, (n.get(t.state) ?? 0) + 1);
    return n;
  };
  const atStart = finalsNow(); // a resumed session's tasks ended before this service started
  new Counter({
    name: 'pilotfish_tasks_ended_total',
    help: 'Tasks that reached a final state since the service started, by state',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [state, n] of finalsNow()) {
        const since = n - (atStart.get(state) ?? 0);
        if (since > 0) this.inc({ state }, since);
      }
    },
  });
  new Gauge({
    name: 'pilotfish_pilot_cores',
    help: "A pilot's cores (all its nodes), by pilot",
    labelNames: ['pilot'],
    registers: [registry],
    collect() {
      this.reset();
      for (const p of ctx.pmgr.list()) {
        if (p.final) continue;
        this.set(
          { pilot: p.uid },
          p.nodes.reduce((n, node) => n + node.cores, 0),
        );
      }
    },
  });
  new Gauge({
    name: 'pilotfish_pilot_cores_busy',
    help: "Cores a pilot's running tasks hold, by pilot (over pilotfish_pilot_cores: utilization)",
    labelNames: ['pilot'],
    registers: [registry],
    collect() {
      const busy = new Map<string, number>();
      for (const p of ctx.pmgr.list()) if (!p.final) busy.set(p.uid, 0);
      for (const t of tasks.values()) {
        if (t.pilot === undefined || !RUNNING.has(t.state) || !busy.has(t.pilot)) continue;
        const d = t.description;
        busy.set(t.pilot, busy.get(t.pilot)! + (d.ranks ?? 1) * (d.coresPerRank ?? 1));
      }
      this.reset();
      for (const [pilot, n] of busy) this.set({ pilot }, n);
    },
  });
  new Gauge({
    name: 'pilotfish_tasks_queued',
    help: 'Tasks waiting to run, by the pilot whose agent holds them ("" while none is chosen yet)',
    labelNames: ['pilot'],
    registers: [registry],
    collect() {
      const queued = new Map<string, number>([['', 0]]);
      for (const p of ctx.pmgr.list()) if (!p.final) queued.set(p.uid, 0);
      for (const t of tasks.values()) {
        if (t.final || RUNNING.has(t.state) || AFTER_RUN.has(t.state)) continue;
        const at = t.pilot ?? '';
        queued.set(at, (queued.get(at) ?? 0) + 1);
      }
      this.reset();
      for (const [pilot, n] of queued) this.set({ pilot }, n);
    },
  });
  const requests = new Counter({
    name: 'pilotfish_http_requests_total',
    help: 'HTTP requests answered, by method, route and status',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  app.addHook('onResponse', (req, reply, done) => {
    requests.inc({
      method: req.method,
      route: req.routeOptions.url ?? 'unmatched',
      status: String(reply.statusCode),
    });
    done();
  });
  app.get(
    '/metrics',
    {
      schema: { summary: 'Metrics in the Prometheus text format', tags: ['service'] },
      config: { auth: { scope: 'read' } },
    },
    async (_req, reply) => reply.type(registry.contentType).send(await registry.metrics()),
  );
}
