/**
 * A state model as data: ordered states, the allowed transitions and the owner of each.
 * The task and pilot models are instances; docs/state-model.md is checked against them.
 */
export interface Transition<S extends string> {
  from: S;
  to: S;
  /** The only component allowed to make this transition. */
  owner: string;
}

export interface StateModel<S extends string> {
  readonly name: 'task' | 'pilot';
  /** All states in model order; the final states come last. */
  readonly states: readonly S[];
  readonly finals: readonly S[];
  /** The final state reached only by passing every earlier state. */
  readonly success: S;
  /** Owner of each non-final state: the component that holds an entity in it. */
  readonly holders: Readonly<Record<string, string>>;
  readonly transitions: readonly Transition<S>[];
}

/** The final states of every model, tasks and pilots alike: success, failure, cancel. */
export const FINAL_STATES = ['DONE', 'FAILED', 'CANCELED'] as const;
export type FinalState = (typeof FINAL_STATES)[number];
/** The same, by role, as linearModel takes them. */
export const FINALS = { success: 'DONE', failed: 'FAILED', canceled: 'CANCELED' } as const;

/** True for DONE, FAILED and CANCELED, in any model. */
export function isFinalState(state: string): state is FinalState {
  return (FINAL_STATES as readonly string[]).includes(state);
}

/** Position of `state` in model order, or -1. */
export function rankOf<S extends string>(model: StateModel<S>, state: string): number {
  return (model.states as readonly string[]).indexOf(state);
}

export function isFinal<S extends string>(model: StateModel<S>, state: string): boolean {
  return (model.finals as readonly string[]).includes(state);
}

/** The owner of `from -> to`, or undefined when the model forbids it. */
export function ownerOf<S extends string>(
  model: StateModel<S>,
  from: S,
  to: S,
): string | undefined {
  return ownersOf(model).get(from)?.get(to);
}

/** from -> to -> owner, built once per model: every transition of every task asks. */
const owners = new WeakMap<StateModel<string>, Map<string, Map<string, string>>>();

function ownersOf(model: StateModel<string>): Map<string, Map<string, string>> {
  let byFrom = owners.get(model);
  if (byFrom !== undefined) return byFrom;
  byFrom = new Map();
  for (const t of model.transitions) {
    let byTo = byFrom.get(t.from);
    if (byTo === undefined) byFrom.set(t.from, (byTo = new Map<string, string>()));
    // the first listed wins, as a scan of the list would find it
    if (!byTo.has(t.to)) byTo.set(t.to, t.owner);
  }
  owners.set(model, byFrom);
  return byFrom;
}

/**
 * Builds the transitions of a linear model: each step owned by its listed owner, plus
 * FAILED and CANCELED from every non-final state, owned by whoever holds the entity there.
 */
export function linearModel<S extends string>(
  name: 'task' | 'pilot',
  steps: readonly { state: S; holder: string }[],
  finals: { success: S; failed: S; canceled: S },
  extra: readonly Transition<S>[] = [],
): StateModel<S> {
  const states = [...steps.map((s) => s.state), finals.success, finals.failed, finals.canceled];
  const holders: Record<string, string> = {};
  const transitions: Transition<S>[] = [];
  steps.forEach((step, i) => {
    holders[step.state] = step.holder;
    const next = steps[i + 1]?.state ?? finals.success;
    transitions.push({ from: step.state, to: next, owner: step.holder });
    transitions.push({ from: step.state, to: finals.failed, owner: step.holder });
    transitions.push({ from: step.state, to: finals.canceled, owner: step.holder });
  });
  transitions.push(...extra);
  return {
    name,
    states,
    finals: [finals.success, finals.failed, finals.canceled],
    success: finals.success,
    holders,
    transitions,
  };
}
