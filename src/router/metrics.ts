import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { RouterParts } from './router';

// The router's part of GET /metrics (prom-client): its replicas by state, its queue and
// in-flight requests per model (read when scraped), and what it did (swaps, load times, replicas
// lost), counted as it happens.

export function registerRouterMetrics(registry: Registry, router: RouterParts): void {
  const snapshot = (): ReturnType<RouterParts['snapshot']>['models'] => router.snapshot().models;
  new Gauge({
    name: 'pilotfish_router_replicas',
    help: "The router's replicas, by model and state (waiting, starting, ready, draining, stopping)",
    labelNames: ['model', 'state'],
    registers: [registry],
    collect() {
      this.reset();
      for (const m of snapshot()) {
        const by = new Map<string, number>();
        for (const r of m.replicas) by.set(r.state, (by.get(r.state) ?? 0) + 1);
        for (const [state, n] of by) this.set({ model: m.name, state }, n);
      }
    },
  });
  new Gauge({
    name: 'pilotfish_router_queued',
    help: 'Requests waiting for a replica, by model',
    labelNames: ['model'],
    registers: [registry],
    collect() {
      this.reset();
      for (const m of snapshot()) this.set({ model: m.name }, m.queued);
    },
  });
  new Gauge({
    name: 'pilotfish_router_in_flight',
    help: 'Requests a replica is serving now, by model',
    labelNames: ['model'],
    registers: [registry],
    collect() {
      this.reset();
      for (const m of snapshot()) this.set({ model: m.name }, m.inFlight);
    },
  });
  const swaps = new Counter({
    name: 'pilotfish_router_swaps_total',
    help: 'Starts of a model that stopped others (its swap policy, or for room), by the model started',
    labelNames: ['model'],
    registers: [registry],
  });
  const lost = new Counter({
    name: 'pilotfish_router_replicas_lost_total',
    help: 'Replicas that ended without being stopped (killed, crashed, unhealthy), by model',
    labelNames: ['model'],
    registers: [registry],
  });
  const load = new Histogram({
    name: 'pilotfish_router_replica_load_seconds',
    help: "From a replica's start to its readiness, by model",
    labelNames: ['model'],
    buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
    registers: [registry],
  });
  router.onEvent((e) => {
    if (e.type === 'swap') swaps.inc({ model: e.model });
    else if (e.type === 'replica_ready') load.observe({ model: e.model }, e.loadMs / 1000);
    else if (e.type === 'replica_ended' && !e.expected) lost.inc({ model: e.model });
  });
}
