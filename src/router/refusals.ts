import type { RouteError, StopWhy } from './effects';
import { describeRules, formatLabels, restricts } from '../components/shared/node-labels';
import type { Replica, RouterNode, RouterPilot } from './holdings';
import type { CompiledModel, CompiledRouterConfig } from './models';

// The router's answers to requests it cannot serve: a status, a stable code, and words that say
// what happened and which setting decides it.

export function unknownModel(model: string, config: CompiledRouterConfig): RouteError {
  const known = [...config.models.keys()].slice(0, 20).join(', ');
  return {
    status: 404,
    code: 'E_UNKNOWN_MODEL',
    message: `no model '${model}' here (models: ${known})`,
  };
}

export function queueFull(m: CompiledModel): RouteError {
  return {
    status: 503,
    code: 'E_QUEUE_FULL',
    message: `${m.queueLimit} requests wait for model '${m.name}' already (its queueLimit)`,
  };
}

export function queueTimeout(m: CompiledModel): RouteError {
  return {
    status: 504,
    code: 'E_QUEUE_TIMEOUT',
    message: `no replica of model '${m.name}' took this request in ${m.queueTimeoutMs / 1000} s (its queueTimeoutS)`,
  };
}

export function refusedTooOften(model: string, tries: number, reason: string): RouteError {
  return {
    status: 502,
    code: 'E_BACKEND_ERROR',
    message: `model '${model}': ${tries} replicas in a row refused this request, the last: ${reason}`,
  };
}

const STOP_TEXT: Record<StopWhy, string> = {
  idle: 'idle past its idleTtlS',
  swap: 'another model it may not run with was asked for',
  room: 'to make room for another model',
  handoff: 'its pilot drains: a replacement serves',
  unload: 'unloaded',
  unreachable: 'its connection failed',
  close: 'the router closed',
};

/** A request in flight on a replica that ended: stopped on purpose, or lost. */
export function replicaGone(r: Replica, expected: boolean, reason: string): RouteError {
  const model = r.model;
  return expected
    ? {
        status: 502,
        code: 'E_BACKEND_STOPPED',
        message: `model '${model.name}': its replica ${r.id} was stopped (${STOP_TEXT[r.stopWhy ?? 'unload']}) and its stopGraceS (${model.stopGraceMs / 1000} s) ran out before this request was done: ${reason}`,
      }
    : {
        status: 502,
        code: 'E_BACKEND_LOST',
        message: `model '${model.name}': its replica ${r.id} ended while serving this request: ${reason}`,
      };
}

export function noRoom(m: CompiledModel, pilots: Iterable<RouterPilot>): RouteError {
  const rules = restricts(m.service.placement) ? m.service.placement : undefined;
  const nodeText = (n: RouterNode): string =>
    `${n.name} (${n.cores} cores, ${n.gpus} GPUs${rules !== undefined ? `, ${formatLabels(n.labels)}` : ''})`;
  const have = [...pilots]
    .slice(0, 4)
    .map((p) => {
      const nodes =
        p.nodes === undefined ? '' : `: ${p.nodes.slice(0, 8).map(nodeText).join(', ')}`;
      return `${p.uid} ${p.cores} cores, ${p.gpus} GPUs${nodes}`;
    })
    .join('; ');
  const d = m.service;
  const on = rules !== undefined ? ` on ${describeRules(rules)}` : '';
  return {
    status: 503,
    code: 'E_NO_ROOM',
    message: `model '${m.name}' needs ${d.ranks ?? 1} rank(s) x ${d.coresPerRank ?? 1} cores and ${d.gpusPerRank ?? 0} GPUs per replica${on}; no pilot can ever hold it (${have})`,
  };
}

export function failedToStart(m: CompiledModel, times: number, reason: string): RouteError {
  return {
    status: 502,
    code: 'E_MODEL_FAILED',
    message: `model '${m.name}' failed to start ${times} times in a row: ${reason}`,
  };
}
