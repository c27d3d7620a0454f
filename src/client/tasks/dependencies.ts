import type { TaskDescription } from '../../generated';
import { issuesText, ValidationError } from '../../errors';
import { dependenciesOf } from '../../components/manager-scheduler/dependencies';

/**
 * Checks the `after` entries of a bulk before it is taken on: each names a task of the session
 * or of the bulk, one `on: 'ready'` names a service task, and the bulk's edges have no cycle
 * (a task already taken on can wait only on tasks older than itself, so a cycle lies within a
 * bulk). Throws ValidationError with the path of each offending entry.
 */
export function checkDependencies(
  descs: readonly TaskDescription[],
  uids: readonly string[],
  /** The mode of a task of the session (default 'executable'), undefined for no such task. */
  modeOf: (uid: string) => string | undefined,
): void {
  const index = new Map(uids.map((u, i) => [u, i]));
  const issues: { path: string; message: string }[] = [];
  const edges: number[][] = descs.map(() => []);
  descs.forEach((d, i) => {
    dependenciesOf(d).forEach((dep, j) => {
      const path = `/${i}/after/${j}`;
      const inBulk = index.get(dep.task);
      const mode = inBulk !== undefined ? (descs[inBulk]!.mode ?? 'executable') : modeOf(dep.task);
      if (mode === undefined) {
        issues.push({ path, message: `must name a task of the session ('${dep.task}' is none)` });
      } else if (dep.on === 'ready' && mode !== 'service') {
        issues.push({
          path,
          message: `on 'ready' waits for a service task; ${dep.task} is not one (mode '${mode}')`,
        });
      } else if (inBulk !== undefined) {
        edges[i]!.push(inBulk);
      }
    });
  });
  const cycle = findCycle(edges);
  if (cycle !== undefined) {
    const names = cycle.map((i) => uids[i]).join(' -> ');
    issues.push({
      path: `/${cycle[0]}/after`,
      message: `must not wait on itself through others (cycle: ${names})`,
    });
  }
  if (issues.length > 0) {
    const text = issuesText(issues);
    throw new ValidationError(`invalid TaskDescription: ${text}`, issues);
  }
}

/** A cycle of the graph (node indices, first repeated at the end), iteratively, or undefined. */
function findCycle(edges: readonly number[][]): number[] | undefined {
  const state = new Uint8Array(edges.length); // 0 new, 1 on the path, 2 done
  for (let root = 0; root < edges.length; root++) {
    if (state[root] !== 0) continue;
    const path: number[] = [root];
    const next: number[] = [0];
    state[root] = 1;
    while (path.length > 0) {
      const at = path[path.length - 1]!;
      const k = next[next.length - 1]!;
      if (k >= edges[at]!.length) {
        state[at] = 2;
        path.pop();
        next.pop();
        continue;
      }
      next[next.length - 1] = k + 1;
      const to = edges[at]![k]!;
      if (state[to] === 1) return [...path.slice(path.indexOf(to)), to];
      if (state[to] === 0) {
        state[to] = 1;
        path.push(to);
        next.push(0);
      }
    }
  }
  return undefined;
}
