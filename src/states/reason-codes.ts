import type { Reason } from '../generated';

/** A reason code: the `enum` of `code` in schemas/reason.schema.json. */
export type ReasonCode = Reason['code'];

export interface ReasonCodeInfo {
  /** What happened, for a person reading a failed task or pilot. */
  meaning: string;
  /** The components that put it in a reason's `component`; 'any' when every holder may. */
  emitters: readonly string[];
}

/**
 * Every code a task's or pilot's reason may carry (docs/reason-codes.md is the table users read;
 * both are checked against this). Pure data. `E_*` codes end a task or pilot FAILED or
 * CANCELED; `I_*` codes say why a pilot ended DONE.
 */
export const REASON_CODES: { readonly [C in ReasonCode]: ReasonCodeInfo } = {
  E_AGENT_DIED: {
    meaning:
      "the pilot's agent process died without ending the pilot (exit code or signal given); or, for a task, its agent died and was started again in the allocation (agent.restarts), and the task's job died with it",
    emitters: ['PilotLauncher', 'Executor'],
  },
  E_AGENT_SILENT: {
    meaning:
      "the pilot's agent stopped answering (no heartbeat within the pilot's clientTimeoutS): it was killed",
    emitters: ['PilotLauncher'],
  },
  E_BAD_MESSAGE: {
    meaning: 'a component got a task record it could not read (a bug or a version mismatch)',
    emitters: ['any'],
  },
  E_BAD_REQUEST: {
    meaning:
      "the task's GPU request is inconsistent (gpusPerRank against gpuIndices, or a bad share)",
    emitters: ['AgentScheduler'],
  },
  E_CANCELED: {
    meaning: 'the task or pilot was canceled by the user, or its pilot was',
    emitters: ['any'],
  },
  E_DEPENDENCY: {
    meaning:
      'a task this one waits for (`after`) ended so that its condition can never hold, or a service that let it go stopped serving before it started: the dependency is named',
    emitters: ['AgentScheduler', 'ManagerScheduler'],
  },
  E_EXEC_FAILED: {
    meaning: 'the executable (or its launcher) could not be started, or its spawner was lost',
    emitters: ['Executor'],
  },
  E_EXEC_NOT_FOUND: {
    meaning: 'the executable (or its launcher) does not exist',
    emitters: ['Executor'],
  },
  E_EXEC_PERMISSION: {
    meaning: 'the executable (or its launcher) may not be executed',
    emitters: ['Executor'],
  },
  E_EXIT_CODE: {
    meaning: 'the task exited with a non-zero code (the last line of stderr is in the message)',
    emitters: ['ManagerOutputStager'],
  },
  E_FUNCTION_IMPORT: {
    meaning:
      "the function task's module could not be imported (the import error is given; the worker imports a module once)",
    emitters: ['Executor'],
  },
  E_FUNCTION_RESULT: {
    meaning:
      "the function's return value cannot be carried back: not msgpack-encodable (the path is named) or over the size limit",
    emitters: ['Executor'],
  },
  E_FUNCTION_THREW: {
    meaning: "the function threw: the error's name, message and stack are given",
    emitters: ['Executor'],
  },
  E_JOB_CANCELED: {
    meaning: "the pilot's batch job was canceled outside pilotfish (scancel, the admin)",
    emitters: ['PilotLauncher'],
  },
  E_JOB_FAILED: {
    meaning: "the pilot's batch job failed, or the batch system lost it",
    emitters: ['PilotLauncher'],
  },
  E_LAUNCH: {
    meaning: "the pilot's agent could not be started (e.g. sbatch refused the job)",
    emitters: ['PilotLauncher'],
  },
  E_LAUNCH_METHOD: {
    meaning:
      "the task's launch method cannot run it here (fork with several ranks, srun outside Slurm)",
    emitters: ['Executor'],
  },
  E_LAUNCH_SLOTS: {
    meaning:
      "the task's slots do not suit its launch method (one slot per rank, same size for srun)",
    emitters: ['Executor'],
  },
  E_MODE_UNSUPPORTED: {
    meaning: "the agent has no executor kind for the task's mode yet",
    emitters: ['Executor'],
  },
  E_NEVER_ACTIVE: {
    meaning: 'the agent ended before the pilot became active',
    emitters: ['PilotLauncher'],
  },
  E_NEVER_FITS: {
    meaning: 'the task asks more than any pilot (or node) has: the sizes asked and held are given',
    emitters: ['ManagerScheduler', 'AgentScheduler'],
  },
  E_NO_EXIT_CODE: {
    meaning: 'the task ended without an exit code',
    emitters: ['ManagerOutputStager'],
  },
  E_NO_SANDBOX: {
    meaning: 'the task reached the Executor without a sandbox directory (a bug)',
    emitters: ['Executor'],
  },
  E_NO_PILOT: {
    meaning: 'every pilot the task could go to has ended (no live pilot is added to its manager)',
    emitters: ['ManagerScheduler'],
  },
  E_NO_PILOT_TIME: {
    meaning:
      "the task's walltimeS is longer than any of its pilots has left before it drains, and no other pilot is coming",
    emitters: ['ManagerScheduler'],
  },
  E_NO_SUCH_PILOT: {
    meaning: 'the task is pinned to a pilot that has ended or is not added to the task manager',
    emitters: ['ManagerScheduler'],
  },
  E_OUTPUT_LOST: {
    meaning:
      'no longer given (kept for older records): streamed output that could not be written (a full disk, a quota) is a warning on the task, `task.outputLost`, and its exit decides its state',
    emitters: ['Executor'],
  },
  E_OUT_OF_MEMORY: {
    meaning:
      "the task went past its memory limit (memPerRankMb x ranks, or limits.memoryMb) and the kernel's OOM killer killed it or a process of it: the limit is given; not retried",
    emitters: ['Executor'],
  },
  E_PILOT_DRAINS: {
    meaning:
      "the task waited at a pilot until its walltimeS would pass the pilot's drain point: it went back to start on another pilot, without using a retry",
    emitters: ['AgentScheduler'],
  },
  E_PILOT_ENDED: {
    meaning: "the task's pilot ended (or failed) before the task finished",
    emitters: ['Agent', 'TaskManager', 'ManagerInputStager', 'PilotLauncher'],
  },
  E_POST_EXEC: {
    meaning:
      'a postExec line failed after the executable ran (the line and its exit code are named)',
    emitters: ['Executor'],
  },
  E_PRE_EXEC: {
    meaning:
      'a preExec line failed, so the executable did not run (the line and its exit code are named)',
    emitters: ['Executor'],
  },
  E_RUNTIME_EXCEEDED: {
    meaning: "the agent outlived the pilot's runtime limit and was killed",
    emitters: ['PilotLauncher'],
  },
  E_SERVICE_EXITED: {
    meaning:
      'the service task exited before it was ready: its exit code or signal is given, what it printed is in its stdout and stderr',
    emitters: ['Executor'],
  },
  E_SERVICE_NOT_READY: {
    meaning:
      'the service task was not ready within its startupTimeoutS and was stopped: what was checked is given, what it printed is in its stdout and stderr',
    emitters: ['Executor'],
  },
  E_SERVICE_PORT: {
    meaning: "no free port could be found for a service task's port 'auto'",
    emitters: ['Executor'],
  },
  E_SERVICE_UNHEALTHY: {
    meaning:
      'the ready service task missed its liveness probes (the probe and how many in a row are given) and was killed; it is retried if it has retries left',
    emitters: ['Executor'],
  },
  E_SIGNALED: {
    meaning: 'the task was killed by a signal',
    emitters: ['ManagerOutputStager'],
  },
  E_STAGING: {
    meaning:
      "the task's sandbox could not be created, or a staging directive failed (the file is named)",
    emitters: [
      'AgentInputStager',
      'AgentOutputStager',
      'ManagerInputStager',
      'ManagerOutputStager',
    ],
  },
  E_TASK_TIMEOUT: {
    meaning: 'the task ran longer than its timeoutS and was killed',
    emitters: ['Executor'],
  },
  E_TOO_LARGE: {
    meaning:
      'the task does not fit in one message to its agent (its encoded size and the limit given)',
    emitters: ['TaskManager'],
  },
  E_UNSUPPORTED: {
    meaning: "no launcher for the pilot's resource on this machine (PBS, LSF: scripts only)",
    emitters: ['PilotLauncher'],
  },
  E_WORKER_DIED: {
    meaning:
      'the warm worker running the function call died (crash, abort, exit, out of memory); it was replaced',
    emitters: ['Executor'],
  },
  E_WORKER_START: {
    meaning:
      "the pilot's function workers of the call's language cannot start (no such interpreter, no msgpack, they die before ready): their error is given; tried once per pilot, not retried",
    emitters: ['Executor'],
  },
  I_PILOT_DONE: {
    meaning: 'the pilot ended as asked (its agent said DONE)',
    emitters: ['PilotLauncher'],
  },
};
