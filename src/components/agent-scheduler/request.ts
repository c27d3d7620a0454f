import type { TaskDescription } from '../../generated';
import { isLaneCall } from '../shared/lane-calls';
import { describeRules, nodeAllowed, restricts, type TaskPlacement } from '../shared/node-labels';
import { laneWithRoom } from './lanes';
import { GPU_UNIT, type NodeResources, type NodeState } from './node-state';

/** What one rank asks for, plus the placement rules of its task. */
export interface Request {
  ranks: number;
  cores: number;
  /** Whole GPUs per rank (0 when `share` is used). */
  gpus: number;
  /** Thousandths of one GPU per rank, for a shared GPU (0 when not shared). */
  share: number;
  memMb: number;
  gpuIndices: readonly number[] | undefined;
  colocate: string | undefined;
  exclusive: string | undefined;
  priority: number;
  /** Only the agent's own node (function tasks: its warm workers run there). */
  home: boolean;
  /**
   * A plain function call (isLaneCall): it may queue in a lane, the worker of a core that runs
   * other such calls, up to the lane depth (lanes.ts).
   */
  lane: boolean;
  /** Hard rules on its nodes (a node named, a selector), when it has any. */
  where: TaskPlacement | undefined;
  /** Nodes to try first, in order (placement.prefer). */
  prefer: readonly string[] | undefined;
  /** It sees its node's GPUs without reserving them (placement.gpusVisible). */
  gpusVisible: boolean;
  /** Tasks with equal keys compete for exactly the same capacity. */
  key: string;
}

/** Reads a description into a request, or says why the request is malformed. */
export function requestOf(d: TaskDescription): Request | { error: string } {
  const ranks = d.ranks ?? 1;
  const cores = d.coresPerRank ?? 1;
  const gpr = d.gpusPerRank ?? d.gpuIndices?.length ?? 0;
  if (d.gpuIndices !== undefined && gpr !== d.gpuIndices.length) {
    return {
      error: `gpusPerRank ${gpr} does not match gpuIndices [${d.gpuIndices.join(', ')}] (${d.gpuIndices.length} GPUs)`,
    };
  }
  if (gpr > 1 && !Number.isInteger(gpr)) {
    return { error: `gpusPerRank ${gpr}: above 1 it must be a whole number of GPUs` };
  }
  const shared = gpr > 0 && gpr < 1;
  const share = shared ? Math.round(gpr * GPU_UNIT) : 0;
  if (shared && share === 0) {
    return { error: `gpusPerRank ${gpr} is below the smallest share (0.001)` };
  }
  const p = d.placement;
  const gpusVisible = p?.gpusVisible === true;
  if (gpusVisible && gpr > 0) {
    return { error: `placement.gpusVisible reserves no GPU: gpusPerRank must be 0 (it is ${gpr})` };
  }
  const r: Omit<Request, 'key'> = {
    ranks,
    cores,
    gpus: shared ? 0 : gpr,
    share,
    memMb: d.memPerRankMb ?? 0,
    gpuIndices: d.gpuIndices,
    colocate: d.tags?.colocate,
    exclusive: d.tags?.exclusive,
    priority: d.priority ?? 0,
    home: d.mode === 'function',
    lane: isLaneCall(d),
    where: restricts(p) ? p : undefined,
    prefer: p?.prefer !== undefined && p.prefer.length > 0 ? p.prefer : undefined,
    gpusVisible,
  };
  let place = `${r.gpuIndices?.join(',') ?? ''}|${r.colocate ?? ''}|${r.exclusive ?? ''}`;
  if (p !== undefined) place += `|${JSON.stringify(p)}`;
  const where = r.lane ? 'lane' : r.home ? 'home' : '';
  const key = `${r.priority}|${r.ranks}|${r.cores}|${r.gpus}|${r.share}|${r.memMb}|${place}|${where}`;
  return { ...r, key };
}

/** Whether one rank fits a node of this size when it is empty. */
export function rankFitsSize(r: Request, n: NodeResources): boolean {
  if (r.where !== undefined && !nodeAllowed(r.where, n.name, n.labels ?? {})) return false;
  if (r.cores > n.cores || r.memMb > n.memMb) return false;
  if (r.gpuIndices !== undefined) return r.gpuIndices.every((i) => i < n.gpus);
  return r.share > 0 ? n.gpus >= 1 : r.gpus <= n.gpus;
}

/** How many ranks of `r` an empty node of this size holds. */
export function ranksPerEmptyNode(r: Request, n: NodeResources): number {
  if (!rankFitsSize(r, n)) return 0;
  let k = Math.floor(n.cores / r.cores);
  if (r.memMb > 0) k = Math.min(k, Math.floor(n.memMb / r.memMb));
  if (r.gpuIndices !== undefined) k = Math.min(k, 1);
  else if (r.gpus > 0) k = Math.min(k, Math.floor(n.gpus / r.gpus));
  else if (r.share > 0) k = Math.min(k, n.gpus * Math.floor(GPU_UNIT / r.share));
  return k;
}

/** Whether one rank of `r` fits the node's free capacity now (ownership is checked elsewhere). */
export function rankFitsFree(r: Request, n: NodeState): boolean {
  if (r.lane && laneWithRoom(n) !== undefined) return true;
  if (r.cores > n.freeCores.length || r.memMb > n.memFree) return false;
  if (r.gpuIndices !== undefined) return r.gpuIndices.every((i) => n.gpuFree[i] === 1000);
  if (r.share > 0) return n.wholeGpus > 0 || n.bestPartial >= r.share;
  return r.gpus <= n.wholeGpus;
}

/** How many ranks of `r` fit the node's free capacity now (ownership is checked elsewhere). */
export function ranksFitFree(r: Request, n: NodeState): number {
  let k = Math.floor(n.freeCores.length / r.cores);
  if (r.memMb > 0) k = Math.min(k, Math.floor(n.memFree / r.memMb));
  if (r.gpuIndices !== undefined) return rankFitsFree(r, n) ? Math.min(k, 1) : 0;
  if (r.gpus > 0) return Math.min(k, Math.floor(n.wholeGpus / r.gpus));
  if (r.share > 0) {
    let shares = 0;
    for (const f of n.gpuFree) shares += Math.floor(f / r.share);
    return Math.min(k, shares);
  }
  return k;
}

export function describeRequest(r: Request): string {
  const gpus =
    r.gpuIndices !== undefined
      ? `GPUs [${r.gpuIndices.join(', ')}]`
      : r.share > 0
        ? `${r.share / GPU_UNIT} of a GPU`
        : `${r.gpus} GPUs`;
  const on = r.where === undefined ? '' : ` on ${describeRules(r.where)}`;
  return `${r.ranks} rank(s) x ${r.cores} cores, ${gpus}, ${r.memMb} MiB${on}`;
}
