/* Generated from schemas/control-message.schema.json by scripts/gen-types.js: do not edit. */
import type { Reason } from './reason';
import type { WaitReason } from './wait-reason';

/**
 * Messages on the session's control pubsub: cancel, shutdown, agent life. All but probes name their session: ports are reused, and an orphaned agent of another session may be connected to ours.
 */
export type ControlMessage =
  | {
      type: 'cancel_tasks';
      session: string;
      uids: string[];
    }
  | {
      type: 'service_gone';
      session: string;
      uid: string;
      attempt: number;
      retry: boolean;
    }
  | {
      type: 'shutdown_agent';
      session: string;
      pilot: string;
      final: 'DONE' | 'FAILED' | 'CANCELED';
      message?: string;
    }
  | {
      type: 'agent_ready';
      session: string;
      pilot: string;
      nodes: {
        name: string;
        cores: number;
        gpus: number;
      }[];
      /**
       * Milliseconds from now until the pilot drains (stops starting tasks): its end, less signalBeforeEnd.seconds. A task that declares walltimeS starts there only if it can end by then.
       */
      drainInMs?: number;
      /**
       * What the agent found wrong with the pilot's resources at start (more cores or GPUs than the machine has; an MPI that srun cannot start), said once, and what it found since (agent_warning).
       */
      warnings?: string[];
      /**
       * The agent was started again in its allocation after the one before it died (agent.restarts), this many times: the client sends again the tasks it may never have received.
       */
      restarts?: number;
      startupMs?: AgentStartup;
    }
  | {
      type: 'agent_final';
      session: string;
      pilot: string;
      final: 'DONE' | 'FAILED' | 'CANCELED';
      message: string;
    }
  | {
      type: 'probe';
      from: string;
      nonce: string;
    }
  | {
      type: 'heartbeat';
      session: string;
      ts: number;
    }
  | {
      type: 'client_resumed';
      session: string;
    }
  | {
      type: 'agent_heartbeat';
      session: string;
      pilot: string;
      /**
       * The agent's parts it has not heard from (its sub-agents), each since it last heard it (ms since the epoch): the client shows the latest list (absent: none is silent). At most 1000: an agent with more sends those silent longest.
       *
       * @maxItems 1000
       */
      silent?: {
        part: string;
        since: number;
      }[];
    }
  | {
      type: 'agent_waits';
      session: string;
      pilot: string;
      /**
       * @maxItems 1000
       */
      waits: {
        /**
         * What the tasks ask (the AgentScheduler's request key).
         */
        shape: string;
        /**
         * The first waiting task of the shape.
         */
        task?: string;
        /**
         * Its attempt.
         */
        attempt?: number;
        reason?: WaitReason;
        /**
         * Estimated starts of the shape's first waiting tasks, in order, from the agent's plan (running tasks end at their walltimeS, else timeoutS).
         *
         * @maxItems 1000
         */
        starts?: {
          task: string;
          attempt: number;
          /**
           * When it is expected to start (epoch ms).
           */
          at: number;
        }[];
        /**
         * Why the shape's waiting tasks not in `starts` have no estimated start.
         */
        noEstimate?: string;
      }[];
    }
  | {
      type: 'agent_returns';
      session: string;
      pilot: string;
      /**
       * @maxItems 1000
       */
      tasks: {
        uid: string;
        attempt: number;
      }[];
      reason: Reason;
    }
  | {
      type: 'agent_warning';
      session: string;
      pilot: string;
      warning: string;
    };

/**
 * How the agent's start went, phase by phase: each is when the phase was done, in ms since its process started (the agent's own clock).
 */
export interface AgentStartup {
  /**
   * When its process had started and loaded the agent's code.
   */
  process?: number;
  /**
   * When its config was read and checked.
   */
  config?: number;
  /**
   * When its nodes, cores and launch methods were found (probes included).
   */
  resources?: number;
  /**
   * When its update workers were up, the store reached.
   */
  store?: number;
  /**
   * When its spawner helpers (and task cgroups) were ready, and its sub-agents' hub bound.
   */
  helpers?: number;
  /**
   * When its link to the client (the control bus) was up.
   */
  control?: number;
  /**
   * When it sent this message.
   */
  ready?: number;
}
