import type { Reason } from '../../../generated';
import { COMPONENTS } from '../../../states/task-model';
import type { TaskDescription } from '../../../generated';
import type { LivenessChecks, ReadyChecks, ServiceJob } from '../effects';
import type { ExecutorKind } from './kind';
import { processKind } from './process';

const EXECUTOR = COMPONENTS.executor;

/** startupTimeoutS when the description gives none. */
export const DEFAULT_STARTUP_TIMEOUT_S = 60;
/** service.liveness's defaults (docs/services.md). */
export const LIVENESS_DEFAULTS = { intervalS: 10, failures: 3, timeoutS: 2 } as const;

/**
 * mode 'service': its executable, started as mode 'executable' starts one, with PF_PORT, then
 * probed until ready (the shell's ServiceRunner); the endpoint is the host of its first rank.
 */
export const serviceKind: ExecutorKind<ServiceJob> = {
  mode: 'service',

  prepare(task, sandbox, launch) {
    const prepared = processKind.prepare(task, sandbox, launch);
    if (!prepared.ok) return prepared;
    const s = task.description.service ?? {};
    const process = prepared.job;
    if (typeof s.port === 'number') process.spec.env.PF_PORT = String(s.port);
    // On one machine the agent's node is this machine: its loopback reaches a service bound to
    // any address. In an allocation: the agent's host name on its node, else the node's address.
    const node = task.slots?.[0]?.node;
    const agent = launch.agentNode;
    const host =
      agent === undefined
        ? '127.0.0.1'
        : node === undefined || node === agent.name
          ? (agent.host ?? agent.name)
          : (launch.nodeHosts?.get(node) ?? node);
    const ready: ReadyChecks = s.ready ?? (s.port !== undefined ? { tcp: true } : {});
    const job: ServiceJob = { kind: 'service', process, host, ready };
    if (s.port !== undefined) job.port = s.port;
    const liveness = livenessOf(s);
    if (liveness !== undefined) job.liveness = liveness;
    return { ok: true, job };
  },

  startFailure(task, job, f, pid): Reason {
    if (f.code === 'E_SERVICE_PORT') return reason('E_SERVICE_PORT', f.message);
    return processKind.startFailure(task, job.process, f, pid);
  },

  exitReason(task, exit) {
    const steps = processKind.exitReason?.(task, exit);
    if (steps !== undefined || task.endpoint !== undefined || task.stopped === true) return steps;
    const how =
      exit.signal !== null ? `was killed by ${exit.signal}` : `exited with code ${exit.exitCode}`;
    return reason(
      'E_SERVICE_EXITED',
      `service '${task.description.executable}' ${how} before it was ready (see its stdout and stderr)`,
      { exitCode: exit.exitCode, signal: exit.signal },
    );
  },

  readiness: {
    withinS: (task) => task.description.service?.startupTimeoutS ?? DEFAULT_STARTUP_TIMEOUT_S,
    notReady(task, job) {
      const s = this.withinS(task);
      return reason(
        'E_SERVICE_NOT_READY',
        `service '${task.description.executable}' was not ready within its startupTimeoutS of ${s} s (waiting for ${describeChecks(job)}) and was stopped; see its stdout and stderr`,
        { startupTimeoutS: s, ready: { ...job.ready }, host: job.host },
      );
    },
    unhealthy(task, job, misses) {
      const l = job.liveness!;
      const probe = l.http !== undefined ? `HTTP 2xx from GET ${l.http}` : 'a TCP connection';
      return reason(
        'E_SERVICE_UNHEALTHY',
        `service '${task.description.executable}' stopped answering once ready: ${probe} on ${task.endpoint ?? job.host} missed ${misses} probes in a row (every ${l.intervalMs / 1000} s, ${l.timeoutMs / 1000} s each); it was killed`,
        { liveness: { ...l }, misses, endpoint: task.endpoint },
      );
    },
  },
};

/**
 * The liveness checks of a service: as given, else (with a port) the HTTP path it was ready on
 * or a TCP connect; none without a port or with `liveness: false`.
 */
export function livenessOf(s: NonNullable<TaskDescription['service']>): LivenessChecks | undefined {
  const l = s.liveness;
  if (l === false || s.port === undefined) return undefined;
  const d = LIVENESS_DEFAULTS;
  const check =
    l !== undefined
      ? {
          ...(l.tcp === true ? { tcp: true } : {}),
          ...(l.http !== undefined ? { http: l.http } : {}),
        }
      : s.ready?.http !== undefined
        ? { http: s.ready.http }
        : { tcp: true };
  return {
    ...check,
    intervalMs: (l?.intervalS ?? d.intervalS) * 1000,
    failures: l?.failures ?? d.failures,
    timeoutMs: (l?.timeoutS ?? d.timeoutS) * 1000,
  };
}

/** The checks a service waits for, in words: `a line matching /x/, HTTP 2xx from GET /health`. */
export function describeChecks(job: ServiceJob): string {
  const r = job.ready;
  const parts: string[] = [];
  if (r.pattern !== undefined) parts.push(`a line matching /${r.pattern}/`);
  if (r.tcp === true) parts.push(`a TCP connection to ${job.host}`);
  if (r.http !== undefined) parts.push(`HTTP 2xx from GET ${r.http} on ${job.host}`);
  return parts.length === 0 ? 'it to start' : parts.join(', ');
}

function reason(code: Reason['code'], message: string, detail?: Record<string, unknown>): Reason {
  return { code, message, component: EXECUTOR, ...(detail !== undefined ? { detail } : {}) };
}
