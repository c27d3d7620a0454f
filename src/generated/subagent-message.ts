/* Generated from schemas/subagent-message.schema.json by scripts/gen-types.js: do not edit. */

/**
 * Messages between a pilot's main agent (the hub) and its per-node sub-agents. Every one names its session, pilot and node; the hub admits only the pilot's own CurveZMQ key.
 */
export type SubAgentMessage =
  | {
      type: 'hello';
      session: string;
      pilot: string;
      node: string;
      incarnation: string;
      running: {
        uid: string;
        pid: number;
      }[];
      /**
       * @maxItems 65536
       */
      ended: (
        | {
            ev: 'exited';
            uid: string;
            exitCode: number | null;
            signal: string | null;
            t?: number;
            [k: string]: unknown;
          }
        | {
            ev: 'failed';
            uid: string;
            code: string;
            message: string;
          }
      )[];
    }
  | {
      type: 'ack';
      session: string;
      pilot: string;
      node: string;
      seq: number;
    }
  | {
      type: 'beat';
      session: string;
      pilot: string;
      node: string;
      /**
       * Which main agent sent it (its process and start): a sub-agent that hears a new one (the agent was started again) says hello to it.
       */
      hub?: string;
    }
  | {
      type: 'events';
      session: string;
      pilot: string;
      node: string;
      started?: {
        uid: string;
        pid: number;
        t?: number;
      }[];
      ended?: (
        | {
            ev: 'exited';
            uid: string;
            exitCode: number | null;
            signal: string | null;
            t?: number;
            [k: string]: unknown;
          }
        | {
            ev: 'failed';
            uid: string;
            code: string;
            message: string;
          }
      )[];
      warning?: string;
    }
  | {
      type: 'ops';
      session: string;
      pilot: string;
      node: string;
      seq: number;
      /**
       * Items: One process to start on the node (the spawner helpers' spawn request, less what the node's own pool adds: cgroups).
       */
      spawn: {
        uid: string;
        executable: string;
        args: string[];
        env: {
          [k: string]: string;
        };
        cwd: string;
        stdoutPath?: string;
        stderrPath?: string;
        stream?: {
          attempt: number;
          capBytes?: number;
        };
        mkdir?: string;
        /**
         * The node's C spawner helper may keep mkdir as a spare for a later task's own directory when the task exits 0 and leaves it empty (SpawnSpec.recycle).
         */
        recycle?: boolean;
        files?: {
          path: string;
          content: string;
        }[];
        killScope?: 'process';
        cpus?: string;
        after?: string;
        limits?: {
          memoryBytes?: number;
          pids?: number;
          cpus?: number;
        };
      }[];
      kill: {
        uid: string;
        signal:
          | 'SIGTERM'
          | 'SIGKILL'
          | 'SIGINT'
          | 'SIGHUP'
          | 'SIGQUIT'
          | 'SIGUSR1'
          | 'SIGUSR2'
          | 'SIGALRM';
      }[];
      /**
       * Which main agent sent it (its process and start): a sub-agent that hears a new one (the agent was started again) says hello to it.
       */
      hub?: string;
    }
  | {
      type: 'end';
      session: string;
      pilot: string;
      node: string;
    };
