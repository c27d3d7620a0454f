import type { Labels, TaskDescription } from '../../generated';

/** Where a task may run and would rather run (TaskDescription.placement). */
export type TaskPlacement = NonNullable<TaskDescription['placement']>;

/** A node by its name and labels: what placement rules are checked against. */
export interface NodeLabels {
  name: string;
  labels: Labels;
}

const NONE: Labels = Object.freeze({});

/**
 * A node's labels: the pilot's own (on every node) under the node's (by name), as a pilot
 * description gives them. The same object for every node without labels of its own.
 */
export function labelsOfNode(
  name: string,
  labels: Labels | undefined,
  nodeLabels: Readonly<Record<string, Labels>> | undefined,
): Labels {
  const own = nodeLabels?.[name];
  if (own === undefined) return labels ?? NONE;
  return labels === undefined ? own : { ...labels, ...own };
}

/** Whether a node (its name and labels) may hold a task by its placement's hard rules. */
export function nodeAllowed(p: TaskPlacement | undefined, name: string, labels: Labels): boolean {
  if (p === undefined) return true;
  if (p.node !== undefined && p.node !== name) return false;
  if (p.selector !== undefined) {
    for (const k in p.selector) if (labels[k] !== p.selector[k]) return false;
  }
  return true;
}

/** Whether a placement has hard rules (a node named, a selector) that rule nodes out. */
export function restricts(p: TaskPlacement | undefined): boolean {
  return p !== undefined && (p.node !== undefined || p.selector !== undefined);
}

/** The hard rules in words, for reasons: "node 'n2', labels gpu=a100". */
export function describeRules(p: TaskPlacement): string {
  const parts: string[] = [];
  if (p.node !== undefined) parts.push(`node '${p.node}'`);
  if (p.selector !== undefined) parts.push(`labels ${formatLabels(p.selector)}`);
  return parts.join(', ');
}

export function formatLabels(l: Labels): string {
  const s = Object.entries(l)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  return s === '' ? '(none)' : s;
}
