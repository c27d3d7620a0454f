import { ValidationError } from '../../../errors';
import type { NodeResources } from '../../../components/agent-scheduler/node-state';
import { expandHostlist } from './hostlist';

/**
 * Memory per node when neither Slurm nor the config says: 1 TiB (in MiB). Large enough that
 * memory never limits placement, finite so the scheduler's arithmetic stays exact; Slurm then
 * enforces whatever limit the job really has.
 */
export const DEFAULT_MEM_MB_PER_NODE = 1024 * 1024;

export interface SlurmNodesOptions {
  /** GPUs per node when Slurm does not say (SLURM_GPUS_ON_NODE / SLURM_JOB_GPUS unset). */
  gpusPerNode: number;
  /** Memory per node in MiB when Slurm does not say; {@link DEFAULT_MEM_MB_PER_NODE} if unset. */
  memMbPerNode?: number;
}

/**
 * The nodes of the Slurm allocation this process runs in, read from the job's environment
 * (pure: pass `process.env`).
 *
 * - names: SLURM_JOB_NODELIST (else SLURM_NODELIST, which inside a step is the step's nodes),
 *   in Slurm's compressed syntax (`n[1-3]`).
 * - cores: SLURM_JOB_CPUS_PER_NODE (`2(x3),1` = 2,2,2,1, one count per node in list order);
 *   else SLURM_CPUS_ON_NODE for every node (it describes only the node it is read on).
 * - gpus: SLURM_GPUS_ON_NODE; else the number of indices in SLURM_JOB_GPUS (`0,1`); else
 *   `opts.gpusPerNode`.
 * - memory (MiB): SLURM_MEM_PER_NODE (`--mem`); else SLURM_MEM_PER_CPU times the node's cores
 *   (`--mem-per-cpu` or the cluster's DefMemPerCPU); else `opts.memMbPerNode`; else
 *   {@link DEFAULT_MEM_MB_PER_NODE}.
 *
 * @throws ValidationError naming the variable (as `/NAME`) when one is missing or malformed,
 * or when the counts do not match the node list.
 */
export function slurmNodes(env: NodeJS.ProcessEnv, opts: SlurmNodesOptions): NodeResources[] {
  checkOption('gpusPerNode', opts.gpusPerNode, 0);
  if (opts.memMbPerNode !== undefined) checkOption('memMbPerNode', opts.memMbPerNode, 1);

  const listVar = env.SLURM_JOB_NODELIST !== undefined ? 'SLURM_JOB_NODELIST' : 'SLURM_NODELIST';
  const list = env[listVar];
  if (list === undefined || list.trim() === '') {
    throw invalid(
      'SLURM_JOB_NODELIST',
      'is not set (nor SLURM_NODELIST): not inside a Slurm allocation?',
    );
  }
  let names: string[];
  try {
    names = expandHostlist(list);
  } catch (e) {
    throw invalid(listVar, `'${list}' is not a valid host list: ${(e as Error).message}`, e);
  }

  const cores = coresPerNode(env, names.length);
  const gpus = gpusPerNode(env) ?? opts.gpusPerNode;
  const memPerNode = count(env, 'SLURM_MEM_PER_NODE', 1);
  const memPerCpu = count(env, 'SLURM_MEM_PER_CPU', 1);
  const memFallback = opts.memMbPerNode ?? DEFAULT_MEM_MB_PER_NODE;

  return names.map((name, i) => {
    const c = cores[i]!;
    const memMb = memPerNode ?? (memPerCpu !== undefined ? memPerCpu * c : memFallback);
    return { name, cores: c, gpus, memMb };
  });
}

function coresPerNode(env: NodeJS.ProcessEnv, nodes: number): number[] {
  const spec = env.SLURM_JOB_CPUS_PER_NODE;
  if (spec === undefined) {
    const each = count(env, 'SLURM_CPUS_ON_NODE', 1);
    if (each === undefined) {
      throw invalid('SLURM_JOB_CPUS_PER_NODE', 'is not set (nor SLURM_CPUS_ON_NODE)');
    }
    return Array.from({ length: nodes }, () => each);
  }
  const out: number[] = [];
  let total = 0;
  for (const item of spec.split(',')) {
    const m = /^\s*([1-9]\d*)(?:\(x([1-9]\d*)\))?\s*$/.exec(item);
    if (!m) {
      throw invalid(
        'SLURM_JOB_CPUS_PER_NODE',
        `'${spec}' is malformed at '${item}': expected N or N(xM) items separated by commas, as in 2(x3),1`,
      );
    }
    const repeat = Number(m[2] ?? 1);
    total += repeat;
    if (total <= nodes) for (let k = 0; k < repeat; k++) out.push(Number(m[1]));
  }
  if (total !== nodes) {
    throw invalid(
      'SLURM_JOB_CPUS_PER_NODE',
      `'${spec}' gives ${total} node(s) but the node list has ${nodes}`,
    );
  }
  return out;
}

function gpusPerNode(env: NodeJS.ProcessEnv): number | undefined {
  const onNode = count(env, 'SLURM_GPUS_ON_NODE', 0);
  if (onNode !== undefined) return onNode;
  const ids = env.SLURM_JOB_GPUS;
  if (ids === undefined || ids.trim() === '') return undefined;
  if (!/^\d+(,\d+)*$/.test(ids.trim())) {
    throw invalid('SLURM_JOB_GPUS', `'${ids}' is not a comma-separated list of GPU indices`);
  }
  return ids.trim().split(',').length;
}

/** An integer variable >= min, or undefined when unset or empty. */
function count(env: NodeJS.ProcessEnv, name: string, min: number): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const v = raw.trim();
  if (!/^\d+$/.test(v) || Number(v) < min || !Number.isSafeInteger(Number(v))) {
    throw invalid(name, `'${raw}' is not an integer >= ${min}`);
  }
  return Number(v);
}

function checkOption(name: string, v: number, min: number): void {
  if (!Number.isSafeInteger(v) || v < min) {
    throw new ValidationError(
      `invalid slurmNodes option ${name}: ${v} is not an integer >= ${min}`,
      [{ path: `/${name}`, message: `must be an integer >= ${min}` }],
    );
  }
}

function invalid(variable: string, why: string, cause?: unknown): ValidationError {
  const err = new ValidationError(`Slurm environment: ${variable} ${why}`, [
    { path: `/${variable}`, message: why },
  ]);
  if (cause !== undefined) err.cause = cause;
  return err;
}
