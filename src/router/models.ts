import { issuesText, ValidationError, type ValidationIssue } from '../errors';
import type { RouterConfig, RouterModel, TaskDescription } from '../generated';
import { parseRouterConfig } from '../lib/validate';
import { swapperFor, type Resources, type Swapper } from './swapper';

/** A model as the router core uses it: every default filled in, times in ms. */
export interface CompiledModel {
  name: string;
  aliases: readonly string[];
  /** The service task of a replica, less what the router sets (uid, pilot). */
  service: TaskDescription;
  /** What one replica holds on its pilot. */
  uses: Resources;
  minReplicas: number;
  maxReplicas: number;
  /** 0: never stopped for being idle. */
  idleTtlMs: number;
  concurrency: number;
  queueLimit: number;
  queueTimeoutMs: number;
  priority: number;
  stopGraceMs: number;
  /** Undefined: twice the model's last load time, at least 60 s. */
  handoffLeadMs: number | undefined;
}

export interface CompiledRouterConfig {
  /** By name, in the order of the config. */
  models: ReadonlyMap<string, CompiledModel>;
  /** The model a request's `model` names (its name or an alias). */
  lookup(name: string): CompiledModel | undefined;
  swapper: Swapper;
}

/** What the router sets on a replica's task itself. */
const SET_BY_ROUTER = ['uid', 'mode', 'pilot', 'retries', 'after'] as const;

/**
 * Checks a router config (schemas/router-config.schema.json, then what a schema cannot say:
 * names unique, groups and sets naming models) and fills in its defaults. Throws a
 * ValidationError naming each path.
 */
export function compileRouterConfig(input: unknown): CompiledRouterConfig {
  const config = parseRouterConfig(withServiceMode(input));
  const issues: ValidationIssue[] = [];
  const byName = new Map<string, CompiledModel>();
  const lookup = new Map<string, CompiledModel>();
  config.models.forEach((m, i) => {
    const compiled = compileModel(m, `/models/${i}`, issues);
    byName.set(m.name, compiled);
    for (const [j, n] of [m.name, ...(m.aliases ?? [])].entries()) {
      if (lookup.has(n)) {
        const where = j === 0 ? `/models/${i}/name` : `/models/${i}/aliases/${j - 1}`;
        issues.push({ path: where, message: `'${n}' names another model already` });
      } else lookup.set(n, compiled);
    }
  });
  checkSwap(config, byName, issues);
  if (issues.length > 0) {
    throw new ValidationError(`invalid RouterConfig: ${issuesText(issues)}`, issues);
  }
  return { models: byName, lookup: (n) => lookup.get(n), swapper: swapperFor(config.swap) };
}

/** Each model's service is a service task: its mode implied, so that its schema holds. */
function withServiceMode(input: unknown): unknown {
  const models = (input as { models?: unknown } | null)?.models;
  if (!Array.isArray(models)) return input;
  return {
    ...(input as object),
    models: models.map((m: unknown) => {
      const service = (m as { service?: unknown } | null)?.service;
      if (service === null || typeof service !== 'object' || Array.isArray(service)) return m;
      if ('mode' in service) return m;
      return { ...(m as object), service: { mode: 'service', ...service } };
    }),
  };
}

function compileModel(m: RouterModel, at: string, issues: ValidationIssue[]): CompiledModel {
  for (const key of SET_BY_ROUTER) {
    if (m.service[key] !== undefined && !(key === 'mode' && m.service.mode === 'service')) {
      issues.push({ path: `${at}/service/${key}`, message: 'is set by the router' });
    }
  }
  if (m.service.service?.port === undefined) {
    issues.push({
      path: `${at}/service/service/port`,
      message: "is required: the router sends requests to the model's port ('auto' is fine)",
    });
  }
  const min = m.replicas?.min ?? 0;
  const max = m.replicas?.max ?? 1;
  if (min > max) {
    issues.push({ path: `${at}/replicas/min`, message: `must be at most replicas.max (${max})` });
  }
  const ranks = m.service.ranks ?? 1;
  return {
    name: m.name,
    aliases: m.aliases ?? [],
    service: { ...m.service, mode: 'service', retries: 0 },
    uses: {
      cores: ranks * (m.service.coresPerRank ?? 1),
      gpus: ranks * (m.service.gpusPerRank ?? 0),
    },
    minReplicas: min,
    maxReplicas: max,
    idleTtlMs: (m.idleTtlS ?? 300) * 1000,
    concurrency: m.concurrency ?? 8,
    queueLimit: m.queueLimit ?? 1000,
    queueTimeoutMs: (m.queueTimeoutS ?? 600) * 1000,
    priority: m.priority ?? 0,
    stopGraceMs: (m.stopGraceS ?? 30) * 1000,
    handoffLeadMs: m.handoffLeadS !== undefined ? m.handoffLeadS * 1000 : undefined,
  };
}

/** Groups and sets name models of the config; a model is in one group at most, in a set at least. */
function checkSwap(
  config: RouterConfig,
  models: ReadonlyMap<string, CompiledModel>,
  issues: ValidationIssue[],
): void {
  const swap = config.swap;
  const known = (name: string, path: string): void => {
    if (!models.has(name)) {
      issues.push({ path, message: `must name a model of /models (by its name), not '${name}'` });
    }
  };
  if (swap?.policy === 'group') {
    const inGroup = new Map<string, string>();
    swap.groups.forEach((g, i) =>
      g.members.forEach((m, j) => {
        known(m, `/swap/groups/${i}/members/${j}`);
        const other = inGroup.get(m);
        if (other !== undefined) {
          issues.push({
            path: `/swap/groups/${i}/members/${j}`,
            message: `'${m}' is in group '${other}' already: a model is in one group at most`,
          });
        }
        inGroup.set(m, g.name);
      }),
    );
  } else if (swap?.policy === 'matrix') {
    swap.sets.forEach((set, i) => set.forEach((m, j) => known(m, `/swap/sets/${i}/${j}`)));
    for (const name of Object.keys(swap.costs ?? {})) known(name, `/swap/costs/${name}`);
    for (const name of models.keys()) {
      if (!swap.sets.some((s) => s.includes(name))) {
        issues.push({ path: '/swap/sets', message: `must put model '${name}' in some set` });
      }
    }
  }
}
