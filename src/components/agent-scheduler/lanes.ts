import type { NodeState } from './node-state';

/**
 * Function call lanes. A function task runs in the warm worker of its slot's core, one call
 * after the other. Holding a core per call while the call lasts microseconds would keep one
 * call in flight per worker, and every hop of the pipeline (scheduler, executor, the pipe to
 * the worker, output staging, notifications) would then run once per call. So a plain call
 * (Request.lane, isLaneCall) may be placed on a core whose worker already has calls, up to LANE_DEPTH of
 * them: the worker queues them and runs them in order, and the pipeline moves them in bulks.
 *
 * A call takes a free core when there is one (a new lane: calls spread over the workers), else
 * the lane with the fewest calls among those taking calls. A lane that is full takes none until
 * half its calls are done, then fills up again: calls reach a worker in bulks of at least half
 * the depth (one pipe write, one wake-up of the worker, for many calls), not one by one as each
 * call ends. The core goes back to the free cores with the lane's last call. Lanes fill only on an open node: a node reserved for a waiting task takes no
 * more calls, so its lanes drain and that task gets its cores (no starvation of other tasks).
 */

/** The core of the lane that takes calls with the fewest calls, if any. */
export function laneWithRoom(n: NodeState): number | undefined {
  let best: number | undefined;
  let fewest = Infinity;
  for (const [core, lane] of n.lanes) {
    if (!lane.full && lane.calls < fewest) {
      best = core;
      fewest = lane.calls;
    }
  }
  return best;
}

/** Places a call: on a free core (a new lane) if any, else in the lane with the most room. */
export function enterLane(n: NodeState): number {
  const free = n.freeCores.pop();
  if (free !== undefined) {
    n.lanes.set(free, { calls: 1, full: n.laneDepth <= 1 });
    return free;
  }
  const core = laneWithRoom(n);
  if (core === undefined) throw new Error('enterLane: no free core and no lane with room');
  const lane = n.lanes.get(core)!;
  if (++lane.calls >= n.laneDepth) lane.full = true;
  return core;
}

/** A call left its lane; the lane's last one gives the core back. */
export function leaveLane(n: NodeState, core: number): void {
  const lane = n.lanes.get(core);
  if (lane === undefined) return;
  if (--lane.calls > 0) {
    if (lane.calls * 2 <= n.laneDepth) lane.full = false;
    return;
  }
  n.lanes.delete(core);
  n.freeCores.push(core);
}
