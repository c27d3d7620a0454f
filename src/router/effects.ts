import type { CompiledModel } from './models';

/** How the router answers a request it cannot route: the HTTP status and the API's error. */
export interface RouteError {
  status: number;
  code: string;
  message: string;
}

/** What happened, for metrics, status, the profile and the timeline. */
export type RouterEvent =
  | { type: 'replica_starting'; model: string; replica: string; pilot: string; replaces?: string }
  | { type: 'replica_ready'; model: string; replica: string; pilot: string; loadMs: number }
  | { type: 'replica_stopping'; model: string; replica: string; why: StopWhy }
  | {
      type: 'replica_ended';
      model: string;
      replica: string;
      reason: string;
      expected: boolean;
      /** Where it served, when it was ready. */
      endpoint?: string;
    }
  | { type: 'swap'; model: string; stopped: string[] };

/** Why a replica is stopped. */
export type StopWhy = 'idle' | 'swap' | 'room' | 'handoff' | 'unload' | 'unreachable' | 'close';

/**
 * The router core's effects (its "syscall table"): fire-and-forget, each result comes back as
 * an event on the core (`onReplicaReady`, `onReplicaEnded`, `onRequestDone`).
 */
export interface RouterEffects {
  /**
   * Starts a replica of `model` on `pilot`: a service task whose uid is `replica`. It comes
   * back as onReplicaReady (with its endpoint) or onReplicaEnded.
   */
  startReplica(
    replica: string,
    model: CompiledModel,
    pilot: string,
    /** Nodes to try first: where the model was ready before, the latest first. */
    prefer: readonly string[],
  ): void;
  /** Stops a replica that was started (cancels its task); its end comes back as onReplicaEnded. */
  stopReplica(replica: string): void;
  /** Sends the request to the replica at `endpoint`; its end comes back as onRequestDone. */
  dispatch(request: string, replica: string, endpoint: string): void;
  /** Answers the request with `error` (a stream already under way is ended); it is forgotten. */
  reject(request: string, error: RouteError): void;
  record(event: RouterEvent): void;
}
