import type { Workload } from '../generated';
import { Simulation } from './engine';
import { simPilots, simTasks, type SimulateOptions } from './setup';

export { Simulation } from './engine';
export { summarize, simProfile, taskTimes, type SimulationReport, type TaskTimes } from './report';
export { simPilots, simTasks, nodesOf, type SimPilot, type SimulateOptions } from './setup';
export { VirtualClock } from './virtual-clock';

/**
 * Simulates a validated workload: the pilots of `opts` (else the workload's) run its tasks for
 * their declared durations on a virtual clock. `record` keeps every notification (for a Profile:
 * the timeline chart). Throws UsageError for what cannot be simulated (a task without a
 * duration), ValidationError for bad dependencies.
 */
export function simulate(w: Workload, opts: SimulateOptions = {}, record = false): Simulation {
  const sim = new Simulation(simPilots(w, opts), simTasks(w, opts), record);
  sim.run();
  return sim;
}
