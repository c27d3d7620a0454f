/* Generated from schemas/control-message.schema.json by scripts/gen-types.js: do not edit. */

/**
 * Messages on the session's control pubsub: cancel, shutdown, agent life.
 */
export type ControlMessage =
  | {
      type: 'cancel_tasks';
      uids: string[];
    }
  | {
      type: 'shutdown_agent';
      pilot: string;
      final: 'DONE' | 'FAILED' | 'CANCELED';
      message?: string;
    }
  | {
      type: 'agent_ready';
      pilot: string;
      nodes: {
        name: string;
        cores: number;
        gpus: number;
      }[];
    }
  | {
      type: 'agent_final';
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
    };
