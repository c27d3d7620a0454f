import type { Reason } from '../../generated';
import { COMPONENTS } from '../../states/task-model';
import { reason } from '../shared/reasons';
import type { NodeResources } from './node-state';
import { describeRequest, ranksPerEmptyNode, type Request } from './request';

const ME = COMPONENTS.agentScheduler;

/**
 * Whether a request can ever run on the pilot's nodes (they never change), and if not, the
 * E_NEVER_FITS reason that says what it asks and what the pilot has. A request found to fit is
 * remembered by key (a bulk asks it per task). Pure.
 */
export class PilotFit {
  /** The pilot's node sizes, with how many nodes have each. */
  private readonly sizes: { spec: NodeResources; count: number }[] = [];
  /** Keys of requests found to fit the pilot. */
  private readonly fitting = new Set<string>();

  constructor(
    nodes: readonly NodeResources[],
    /** The agent's node (Request.home). */
    private readonly home: NodeResources | undefined,
  ) {
    const bySize = new Map<string, { spec: NodeResources; count: number }>();
    for (const spec of nodes) {
      const k = `${spec.cores}/${spec.gpus}/${spec.memMb}`;
      const e = bySize.get(k) ?? { spec, count: 0 };
      e.count++;
      bySize.set(k, e);
    }
    this.sizes.push(...bySize.values());
  }

  /** Why `r` can never run here, or undefined if it can. */
  neverFits(r: Request): Reason | undefined {
    // the nodes never change: a request that fits once always does (a bulk asks it per task)
    if (this.fitting.has(r.key)) return undefined;
    const why = r.home ? this.neverFitsHome(r) : this.neverFitsAnywhere(r);
    if (why === undefined) this.fitting.add(r.key);
    return why;
  }

  private neverFitsAnywhere(r: Request): Reason | undefined {
    const fits =
      r.ranks === 1 || r.colocate !== undefined
        ? this.sizes.some((s) => ranksPerEmptyNode(r, s.spec) >= r.ranks)
        : this.sizes.reduce((k, s) => k + s.count * ranksPerEmptyNode(r, s.spec), 0) >= r.ranks;
    if (fits) return undefined;
    const has = this.sizes
      .map(
        (s) =>
          `${s.count} node(s) with ${s.spec.cores} cores, ${s.spec.gpus} GPUs, ${s.spec.memMb} MiB`,
      )
      .join('; ');
    const where = r.ranks > 1 && r.colocate !== undefined ? ' on one node (colocate)' : '';
    return reason(
      'E_NEVER_FITS',
      `task asks ${describeRequest(r)} per rank${where}; the pilot has ${has}, so it can never run`,
      ME,
      {
        asked: { ...r, key: undefined },
        pilot: this.sizes.map((s) => ({ ...s.spec, count: s.count })),
      },
    );
  }

  /** A task of the agent's node alone: that node, empty, must hold its ranks. */
  private neverFitsHome(r: Request): Reason | undefined {
    const h = this.home;
    if (h !== undefined && ranksPerEmptyNode(r, h) >= r.ranks) return undefined;
    const has = h === undefined ? 'no node' : `${h.cores} cores, ${h.gpus} GPUs, ${h.memMb} MiB`;
    return reason(
      'E_NEVER_FITS',
      `task asks ${describeRequest(r)} per rank on the agent's node${h === undefined ? '' : ` '${h.name}'`} (a function task runs in its workers); that node has ${has}, so it can never run`,
      ME,
      { asked: { ...r, key: undefined }, node: h },
    );
  }
}
