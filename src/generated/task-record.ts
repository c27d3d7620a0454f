/* Generated from schemas/task-record.schema.json by scripts/gen-types.js: do not edit. */
import type { Reason } from './reason';
import type { StagingDirective } from './staging-directive';
import type { TaskDescription } from './task-description';
import type { TaskState } from './task-state';

/**
 * A task as components hand it on: its description plus what the pipeline has added.
 */
export interface TaskRecord {
  uid: string;
  attempt: number;
  state: TaskState;
  session: string;
  description: TaskDescription;
  pilot?: string;
  /**
   * A follow-on start: the uid of the running task whose slots it was given, set by the AgentScheduler; its spawner helper starts it the moment that one's process ends.
   */
  follows?: string;
  sandbox?: string;
  /**
   * Where its stdout and stderr go on the agent: the description's `output`, else the pilot's default; set by the AgentInputStager.
   */
  output?: 'files' | 'stream';
  /**
   * Items: One rank's resources on one node.
   */
  slots?: {
    node: string;
    cores: number[];
    gpus: number[];
    /**
     * Fraction of each listed GPU this rank holds (1 = whole).
     */
    gpuShare?: number;
    memMb?: number;
    /**
     * The GPUs listed are seen, not reserved (placement.gpusVisible): other tasks may hold them.
     */
    gpusUnreserved?: true;
  }[];
  exitCode?: number | null;
  signal?: string | null;
  stdout?: string;
  stderr?: string;
  /**
   * Bytes of its stdout and stderr that its output cap (outputCapBytes) dropped, counted at its exit: its output keeps the first and the last part around a line '[pilotfish: N bytes dropped]'. Absent when nothing was dropped.
   */
  outputDropped?: number;
  /**
   * A warning: some of its streamed output could not be written (a full disk, a quota), naming the stream file and the error. The task's own exit decides its state; only its recorded output is incomplete.
   */
  outputLost?: string;
  /**
   * mode 'function': the function's return value (any value msgpack carries).
   */
  result?: unknown;
  /**
   * mode 'service': host:port where the service is ready (set by the Executor when it is).
   */
  endpoint?: string;
  /**
   * mode 'service': stopped by a cancel or its pilot's end after it was ready; it ends DONE whatever its exit status.
   */
  stopped?: boolean;
  /**
   * The endpoints of the services this task waits for with on 'ready', by the name of each in PF_SERVICE_<NAME>.
   */
  services?: {
    [k: string]: string;
  };
  /**
   * The attempt of each service (by uid) whose ready let this task go (on 'ready'): if that attempt ends before this task starts, the task does not start with its endpoint.
   */
  readyOf?: {
    [k: string]: number;
  };
  reason?: Reason;
  canceled?: boolean;
  /**
   * Submission order in the session: tasks of equal priority start in this order.
   */
  seq?: number;
  /**
   * Retries this task has used (a new attempt after its pilot ended before it started is not counted).
   */
  retried?: number;
  /**
   * The task's staging directives as the client resolved them for the agent: client:// and task://<uid>/ paths made absolute, pilot:// and task:// (this task) kept, action and optional filled in. The description keeps what the user wrote.
   */
  staging?: {
    input: StagingDirective[];
    output: StagingDirective[];
    /**
     * Output directives that failed for a task that had failed already: its failure reason's detail names them.
     */
    problems?: {
      directive: number;
      path: string;
      errno: string;
      message: string;
    }[];
  };
}
