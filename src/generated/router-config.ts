/* Generated from schemas/router-config.schema.json by scripts/gen-types.js: do not edit. */
import type { TaskDescription } from './task-description';

/**
 * The models a model router serves (docs/router.md): each a name a request asks for and a service task the router starts on a pilot when it is asked for, and the policy that says which models may run together.
 */
export interface RouterConfig {
  /**
   * @minItems 1
   * @maxItems 1000
   */
  models: [RouterModel, ...RouterModel[]];
  /**
   * Which models may run at the same time, beyond what fits on the pilots (default: lru, whatever fits; the least recently used idle model is stopped to make room).
   */
  swap?:
    | {
        policy: 'lru';
      }
    | {
        policy: 'group';
        /**
         * @minItems 1
         */
        groups: [RouterGroup, ...RouterGroup[]];
      }
    | {
        policy: 'matrix';
        /**
         * The combinations of models allowed to run together; every model must be in at least one. Starting a model stops the running models outside the set (with it) whose eviction costs least.
         *
         * @minItems 1
         */
        sets: [[string, ...string[]], ...[string, ...string[]][]];
        /**
         * What stopping a running model costs (default 1 each): e.g. its load time in seconds.
         */
        costs?: {
          [k: string]: number;
        };
      };
}
export interface RouterModel {
  /**
   * What a request names in its `model`.
   */
  name: string;
  /**
   * Other names a request may use for it.
   */
  aliases?: string[];
  /**
   * The service task that serves it (mode 'service' is implied; its `service` says its port and when it is ready). The router sets uid, mode, pilot and retries: those may not be given.
   */
  service: TaskDescription;
  replicas?: {
    /**
     * Replicas kept running even when idle (default 0: none until asked for).
     */
    min?: number;
    /**
     * Replicas at most, scaled up with the queue (default 1).
     */
    max?: number;
  };
  /**
   * A replica idle this long is stopped (down to replicas.min); 0: never (default 300).
   */
  idleTtlS?: number;
  /**
   * Requests one replica is given at once (default 8); more wait in the queue.
   */
  concurrency?: number;
  /**
   * Requests that may wait for it at once (default 1000); one more is answered 503.
   */
  queueLimit?: number;
  /**
   * How long a request may wait for a replica (loading included) before it is answered 504 (default 600).
   */
  queueTimeoutS?: number;
  /**
   * The priority of its requests when they say none (higher first; default 0).
   */
  priority?: number;
  /**
   * When it must make room, how long its in-flight requests may go on before it is stopped anyway (default 30).
   */
  stopGraceS?: number;
  /**
   * How long before its pilot's drain point a replacement is started on a pilot with time left (default: twice its last load time, at least 60 s).
   */
  handoffLeadS?: number;
}
export interface RouterGroup {
  name: string;
  /**
   * @minItems 1
   */
  members: [string, ...string[]];
  /**
   * One member at a time: starting one stops the others (default true).
   */
  swap?: boolean;
  /**
   * Starting a member stops the models of every other group but persistent ones (default false).
   */
  exclusive?: boolean;
  /**
   * Its models are not stopped by another group's exclusive member, nor to make room (default false).
   */
  persistent?: boolean;
}
