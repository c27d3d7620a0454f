/* Generated from schemas/control-reply.schema.json by scripts/gen-types.js: do not edit. */
import type { PilotState } from './pilot-state';
import type { Reason } from './reason';
import type { TaskState } from './task-state';
import type { WaitReason } from './wait-reason';

/**
 * A reply on a session's control socket (<session dir>/control.sock): one JSON object per line, one for each request line, in the order of the requests (docs/cli.md). With `ok` true, `result` holds what the request's op answers (`definitions/<op>`); with `ok` false, `error` says why there is none.
 */
export type ControlReply =
  | {
      /**
       * The request's `id`, echoed (absent where the request had none).
       */
      id?: number | string;
      /**
       * Carried out: `result` holds the answer.
       */
      ok: true;
      /**
       * What the request's op answers: `definitions/status`, `definitions/explain`, `definitions/cancel` or `definitions/sandbox`.
       */
      result: SessionStatus | ExplainResult | CancelResult | SandboxLook;
    }
  | {
      /**
       * The request's `id`, echoed (absent where the request had none, or was not JSON).
       */
      id?: number | string;
      /**
       * Not carried out: `error` says why.
       */
      ok: false;
      /**
       * Why the request was not carried out.
       */
      error: ControlError;
    };
/**
 * How a session stands: live (its client answers), closing (its client is closing it), ended (closed), crashed (its client died without closing it).
 */
export type SessionState = 'live' | 'closing' | 'ended' | 'crashed';
/**
 * What `explain` answers: the task's explanation, or null where the session has no task of that uid.
 */
export type ExplainResult = Explanation | null;

/**
 * What `status` answers, and what `pilotfish status --json` prints (of a live session, or read from the store of an ended one).
 */
export interface SessionStatus {
  /**
   * The session's uid.
   */
  session: string;
  /**
   * The session's directory.
   */
  dir: string;
  /**
   * How the session stands.
   */
  state: SessionState;
  /**
   * The client's process, while it is live.
   */
  pid?: number;
  /**
   * The session's pilots, by PilotManager, in the order they were submitted.
   */
  pilots: PilotStatus[];
  /**
   * Tasks per state (states with none left out).
   */
  counts: Partial<Record<TaskState, number>>;
  /**
   * Tasks in all.
   */
  total: number;
  /**
   * Failed tasks per reason code (`E_EXIT_CODE`: 3), codes with none left out; of a live session.
   */
  failures?: {
    [k: string]: number;
  };
  /**
   * Tasks executing now: the first ones by submission, `runningTotal` in all.
   */
  running: RunningTask[];
  /**
   * Tasks executing now, in all.
   */
  runningTotal: number;
  /**
   * The oldest tasks not yet executing, with what they wait for; `pendingTotal` in all.
   */
  pending: Explanation[];
  /**
   * Tasks not yet executing, in all.
   */
  pendingTotal: number;
  /**
   * The session's model routers (docs/router.md), where it runs any: of a live session as they are now; of an ended one as its journal tells (no replicas, queue or requests).
   */
  routers?: RouterStatus[];
}
/**
 * A pilot of the session now.
 */
export interface PilotStatus {
  /**
   * The pilot's uid.
   */
  uid: string;
  /**
   * The pilot's state.
   */
  state: PilotState;
  /**
   * Where it runs: its description's `resource`.
   */
  resource: string;
  /**
   * The cores it holds (what was asked, then what its agent reported).
   */
  cores: number;
  /**
   * The GPUs it holds (what was asked, then what its agent reported).
   */
  gpus: number;
  /**
   * Of its cores, those its executing tasks asked for now (of a live session).
   */
  busyCores?: number;
  /**
   * Of its GPUs, those its executing tasks asked for now (of a live session).
   */
  busyGpus?: number;
  /**
   * Once it ended other than DONE: why.
   */
  reason?: Reason;
  /**
   * What its agent said is not as asked (task limits it cannot enforce, resources beyond the machine's): once its agent reported in, if anything.
   */
  warnings?: string[];
  /**
   * Whether its agent is heard, and its parts that are not: while the pilot is PMGR_ACTIVE (of a live session).
   */
  liveness?: PilotLiveness;
}
/**
 * Whether an active pilot's agent is heard (PyLet's UNKNOWN): `unknown` once no heartbeat came for 3 heartbeat periods (3 s, or half the pilot's agent.clientTimeoutS where that is shorter), until it is heard again (`ok`) or declared lost (the pilot ends FAILED, E_AGENT_SILENT, after clientTimeoutS). `silentParts`: the parts the agent itself reports silent (its sub-agents), as of its last heartbeat; a part may be silent while the pilot is `ok`.
 */
export interface PilotLiveness {
  /**
   * `ok`: heard within the last 3 heartbeat periods; `unknown`: silent, not yet declared lost.
   */
  state: 'ok' | 'unknown';
  /**
   * While `unknown`: when its agent was last heard (ms since the epoch; an agent this client has not heard yet: when the client began to watch it).
   */
  since?: number;
  /**
   * The parts of the pilot its agent reports silent in its last heartbeat (none: empty).
   *
   * @maxItems 1000
   */
  silentParts: SilentPart[];
}
/**
 * A part of a pilot (a sub-agent) that its agent has not heard from.
 */
export interface SilentPart {
  /**
   * Which part, in words: `sub-agent n3`.
   */
  part: string;
  /**
   * When the agent last heard from it (ms since the epoch, the agent's clock).
   */
  since: number;
}
/**
 * A task executing now.
 */
export interface RunningTask {
  /**
   * The task's uid.
   */
  uid: string;
  /**
   * The task's name, where its description gives one.
   */
  name?: string;
  /**
   * The pilot it runs on.
   */
  pilot?: string;
  /**
   * When it started executing (epoch ms), where known.
   */
  since?: number;
}
/**
 * Why a task is where it is: its state and, while it waits, what it waits for; once ended, how. `tmgr.explain(uid)`, `pilotfish explain` and `pilotfish status` show it.
 */
export interface Explanation {
  /**
   * The task's uid.
   */
  uid: string;
  /**
   * The task's name, where its description gives one.
   */
  name?: string;
  /**
   * The task's state, as delivered.
   */
  state: TaskState;
  /**
   * The task's attempt: 1 for the first, one more for each retry.
   */
  attempt: number;
  /**
   * The pilot it is bound to, once bound.
   */
  pilot?: string;
  /**
   * Since when it is in `state` (epoch ms), where known.
   */
  since?: number;
  /**
   * While it waits: what for, as its present holder reports it (docs/scheduling.md).
   */
  waiting?: WaitReason;
  /**
   * While it waits at a pilot's agent: when it is expected to start (epoch ms), from the agent's plan (running tasks end at their walltimeS, else timeoutS; docs/scheduling.md).
   */
  estimatedStart?: number;
  /**
   * While it waits with no estimated start: why there is none.
   */
  noEstimate?: string;
  /**
   * Once it ended other than DONE: why.
   */
  reason?: Reason;
}
/**
 * A model router: per model, its replicas, its queue, its requests in flight, and what it did (loads and their times, swaps, replicas lost, requests served).
 */
export interface RouterStatus {
  /**
   * Where it answers (absent where it shares the service's address).
   */
  url?: string;
  models: RouterModelStatus[];
}
export interface RouterModelStatus {
  name: string;
  /**
   * Requests waiting for a replica of it.
   */
  queued: number;
  /**
   * Requests its replicas serve now.
   */
  inFlight: number;
  /**
   * How long its latest replica took from its start to ready.
   */
  lastLoadMs?: number;
  /**
   * Its replicas that became ready.
   */
  loads: number;
  /**
   * Their mean load time.
   */
  meanLoadMs?: number;
  /**
   * Their longest load time.
   */
  maxLoadMs?: number;
  /**
   * Its starts that stopped other models (its swap policy, or for room).
   */
  swaps: number;
  /**
   * Its replicas that ended without being stopped (killed, crashed, unhealthy).
   */
  lost: number;
  /**
   * Requests its replicas answered, or that ended while served (absent where read from a journal).
   */
  served?: number;
  replicas: ReplicaStatus[];
}
export interface ReplicaStatus {
  /**
   * Its service task's uid.
   */
  id: string;
  /**
   * waiting: for room; starting: its task runs, not ready yet; ready: serving; draining: finishing its requests before it stops; stopping: its task is being canceled.
   */
  state: 'waiting' | 'starting' | 'ready' | 'draining' | 'stopping';
  pilot: string;
  /**
   * The node it runs on, once ready.
   */
  node?: string;
  /**
   * host:port, once ready.
   */
  endpoint?: string;
  inFlight: number;
}
/**
 * What `cancel` answers: each uid asked, in one of three lists.
 */
export interface CancelResult {
  /**
   * Canceled now: they end CANCELED, or in the final state they reach first.
   */
  canceled: string[];
  /**
   * No task of the session has this uid.
   */
  unknown: string[];
  /**
   * Already in a final state: left as they are.
   */
  final: string[];
}
/**
 * What `sandbox` answers: what the pilot's agent said of the path.
 */
export interface SandboxLook {
  /**
   * stat, read: the file's size now.
   */
  size?: number;
  /**
   * list: the directory's entries.
   */
  names?: string[];
  /**
   * read: the bytes, base64.
   */
  data?: string;
}
/**
 * Why a request was not carried out.
 */
export interface ControlError {
  /**
   * E_VALIDATION (the request does not match schemas/control-request.schema.json: see `issues`), E_BAD_JSON (the line is not JSON), E_TOO_LARGE (the line is longer than 4 MiB; the connection is ended), E_CLOSING (the session is closing: `cancel` is refused), E_INTERNAL (the handler failed), or the code of the error the handler met.
   */
  code: string;
  /**
   * What went wrong, for people.
   */
  message: string;
  /**
   * With E_VALIDATION: each thing wrong in the request.
   *
   * Items: One thing wrong in the request.
   */
  issues?: {
    /**
     * Where in the request (a JSON pointer; / for the whole).
     */
    path: string;
    /**
     * What is wrong there.
     */
    message: string;
  }[];
}
