import type { Reason } from '../../generated';
import { COMPONENTS } from '../../states/task-model';
import { reason } from '../shared/reasons';
import type { NodeResources } from './node-state';
import { describeRules, formatLabels } from '../shared/node-labels';
import { describeRequest, rankFitsSize, ranksPerEmptyNode, type Request } from './request';

const ME = COMPONENTS.agentScheduler;

/**
 * Whether a request can ever run on the pilot's nodes (they never change), and if not, the
 * E_NEVER_FITS reason that says what it asks and what the pilot has. A request found to fit is
 * remembered by key (a bulk asks it per task). Pure.
 */
export class PilotFit {
  /** The pilot's node sizes, with how many nodes have each. */
  private readonly sizes: NodeSize[];
  /** Keys of requests found to fit the pilot. */
  private readonly fitting = new Set<string>();

  constructor(
    private readonly nodes: readonly NodeResources[],
    /** The agent's node (Request.home). */
    private readonly home: NodeResources | undefined,
  ) {
    this.sizes = sizesOf(nodes);
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
    // a node named or a selector: only the nodes it allows count (rankFitsSize says which)
    const sizes =
      r.where === undefined ? this.sizes : sizesOf(this.nodes.filter((n) => rankFitsSize(r, n)));
    const fits =
      r.ranks === 1 || r.colocate !== undefined
        ? sizes.some((s) => ranksPerEmptyNode(r, s.spec) >= r.ranks)
        : sizes.reduce((k, s) => k + s.count * ranksPerEmptyNode(r, s.spec), 0) >= r.ranks;
    if (fits) return undefined;
    if (r.where !== undefined && sizes.length === 0) return this.noNodeAllowed(r);
    const has = sizes
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
        pilot: sizes.map((s) => ({ ...s.spec, count: s.count })),
      },
    );
  }

  /** No node of the pilot is the one named, or carries the labels selected. */
  private noNodeAllowed(r: Request): Reason {
    const shown = this.nodes.slice(0, 8).map((n) => `${n.name} (${formatLabels(n.labels ?? {})})`);
    if (this.nodes.length > 8) shown.push(`${this.nodes.length - 8} more`);
    return reason(
      'E_NEVER_FITS',
      `task must run on ${describeRules(r.where!)}; no node of the pilot is one: its nodes (labels) are ${shown.join(', ')}`,
      ME,
      {
        placement: r.where,
        nodes: this.nodes.map((n) => ({ name: n.name, labels: n.labels ?? {} })),
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

interface NodeSize {
  spec: NodeResources;
  count: number;
}

/** Nodes grouped by size (cores, GPUs, memory), with how many have each. */
function sizesOf(nodes: readonly NodeResources[]): NodeSize[] {
  const bySize = new Map<string, NodeSize>();
  for (const spec of nodes) {
    const k = `${spec.cores}/${spec.gpus}/${spec.memMb}`;
    const e = bySize.get(k) ?? { spec, count: 0 };
    e.count++;
    bySize.set(k, e);
  }
  return [...bySize.values()];
}
