/* Generated from schemas/notification.schema.json by scripts/gen-types.js: do not edit. */
import type { PilotState } from './pilot-state';
import type { Reason } from './reason';
import type { TaskState } from './task-state';

export interface Notification {
  /**
   * task or pilot: a state of one. service: an event of a service task (state SERVICE_READY: it is ready at detail.endpoint).
   */
  kind: 'task' | 'pilot' | 'service';
  uid: string;
  attempt: number;
  state: TaskState | PilotState | 'SERVICE_READY';
  ts: number;
  component: string;
  detail?: {
    pilot?: string;
    reason?: Reason;
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
     * mode 'function', with DONE: the function's return value.
     */
    result?: unknown;
    /**
     * kind 'service', SERVICE_READY: host:port of the ready service.
     */
    endpoint?: string;
    sandbox?: string;
    /**
     * With the client's final state of an attempt that ran: the node it ran on (its first rank's), from its slots; the agent's note naming its slots may come after it.
     */
    node?: string;
    /**
     * Where an executable's (or a service's) stdout and stderr go: 'files', `stdout` and `stderr` in its sandbox; 'stream', its pilot's stream files (<pilot sandbox>/output/*.pfout). Sent, either way, with the state that ends its input staging and with its hand-back's final state, so readers never guess it.
     */
    output?: 'files' | 'stream';
    /**
     * On the first state of a new attempt: the retries used so far.
     */
    retried?: number;
    /**
     * Task states passed since the task's last published notification that had none of their own (quiet states of a function task), as pairs: [state code (src/states/state-codes.ts), ms before this notification's ts, ...].
     *
     * @maxItems 64
     */
    passed?: number[];
    /**
     * Where the task runs: per node, the indices of the cores and GPUs it holds.
     */
    slots?: {
      node: string;
      cores: number[];
      gpus: number[];
    }[];
    /**
     * When the task's own command (or function call) started, as its spawner or worker measured it (epoch ms).
     */
    launched?: number;
    /**
     * When the task's own command (or function call) ended, as its spawner or worker measured it (epoch ms).
     */
    exited?: number;
    /**
     * On AGENT_EXECUTING: a follow-on start, queued on the slots of this running task and started by its spawner helper when that one ended (its hold begins at `launched`).
     */
    follows?: string;
    /**
     * On the state after AGENT_EXECUTING: a follow-on start took its slots when its command ended (its hold ends at `exited`).
     */
    followed?: true;
    /**
     * Pilot: when its job started running (epoch ms).
     */
    jobStarted?: number;
    /**
     * Pilot, on its final state: when it began to drain (asked to end, or its runtime ran out; epoch ms).
     */
    drainStarted?: number;
  };
}
