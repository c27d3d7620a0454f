import type { TaskDescription } from '../../generated';

/**
 * Most plain function calls queued in the worker of one core (agent-scheduler/lanes.ts). The
 * ManagerScheduler sizes what it gives a pilot by it too (manager-scheduler/pilot-room.ts).
 * A worker takes more once half its lane is done, so its calls, their results, the hand-backs
 * and the client's refills all move in bulks of about half a lane: at 32, the fixed cost of
 * each message (its encoding's record definitions, the wake-ups of sockets and pipes) bound
 * the rate; 64 gave a quarter more calls per second for no-op calls on 2 cores
 * (docs/performance.md). The price is head-of-line blocking: a long call delays at most 63
 * queued behind it in its worker.
 */
export const LANE_DEPTH = 64;

/**
 * A plain function call: one rank of one core, no GPU, memory, tags or timeoutS. Such a call may
 * queue in a worker behind others (a lane); any other task holds its cores alone while it runs
 * (a timeout counts from the hand-over to the worker, so a call with one must not wait there).
 */
export function isLaneCall(d: TaskDescription): boolean {
  return (
    d.mode === 'function' &&
    (d.ranks ?? 1) === 1 &&
    (d.coresPerRank ?? 1) === 1 &&
    (d.gpusPerRank ?? 0) === 0 &&
    d.gpuIndices === undefined &&
    (d.memPerRankMb ?? 0) === 0 &&
    d.tags?.colocate === undefined &&
    d.tags?.exclusive === undefined &&
    d.timeoutS === undefined
  );
}
