import type { Workload } from '../generated';
import { Simulation } from './engine';
import { withSimulationHeap } from './heap';
import { simPilots, simTasks, type SimulateOptions } from './setup';

export { Simulation } from './engine';
export { summarize, simProfile, taskTimes, type SimulationReport, type TaskTimes } from './report';
export { simPilots, simTasks, nodesOf, type SimPilot, type SimulateOptions } from './setup';
export { VirtualClock } from './virtual-clock';
export {
  DEFAULT_LAUNCH_COSTS,
  LaunchModel,
  launcherNeed,
  type LaunchCosts,
  type PilotLayout,
} from './launch-cost';
export { SIM_HEAP_GROWING_PERCENT } from './heap';

/**
 * Simulates a validated workload: the pilots of `opts` (else the workload's) run its tasks for
 * their declared durations on a virtual clock. `record` keeps every notification (for a Profile:
 * the timeline chart). Throws UsageError for what cannot be simulated (a task without a
 * duration), ValidationError for bad dependencies. It runs with a tighter heap growth than
 * V8's own (heap.ts): the memory a user sees is that of the CLI and the bench alike.
 */
export function simulate(w: Workload, opts: SimulateOptions = {}, record = false): Simulation {
  return withSimulationHeap(() => {
    const sim = new Simulation(simPilots(w, opts), simTasks(w, opts), record);
    sim.run();
    return sim;
  });
}
