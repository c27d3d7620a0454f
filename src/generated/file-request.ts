/* Generated from schemas/file-request.schema.json by scripts/gen-types.js: do not edit. */

/**
 * An agent's request on its pilot's file channel (the transfer staging action). A `write` carries its bytes in a second frame; every request names the session, the pilot and the task whose grant it uses.
 */
export type FileRequest =
  | {
      op: 'open_read';
      session: string;
      pilot: string;
      task: string;
      /**
       * Chosen by the agent; unique among its transfers.
       */
      transfer: string;
      /**
       * Request number, echoed in the reply.
       */
      req: number;
      /**
       * Absolute and normalized, on the client's machine.
       */
      path: string;
    }
  | {
      op: 'read';
      session: string;
      pilot: string;
      task: string;
      /**
       * Chosen by the agent; unique among its transfers.
       */
      transfer: string;
      /**
       * Request number, echoed in the reply.
       */
      req: number;
      offset: number;
      length: number;
    }
  | {
      op: 'end_read';
      bytes?: number;
      sha256?: string;
      session: string;
      pilot: string;
      task: string;
      /**
       * Chosen by the agent; unique among its transfers.
       */
      transfer: string;
      /**
       * Request number, echoed in the reply.
       */
      req: number;
    }
  | {
      op: 'open_write';
      session: string;
      pilot: string;
      task: string;
      /**
       * Chosen by the agent; unique among its transfers.
       */
      transfer: string;
      /**
       * Request number, echoed in the reply.
       */
      req: number;
      /**
       * Absolute and normalized, on the client's machine.
       */
      path: string;
      size: number;
    }
  | {
      op: 'write';
      session: string;
      pilot: string;
      task: string;
      /**
       * Chosen by the agent; unique among its transfers.
       */
      transfer: string;
      /**
       * Request number, echoed in the reply.
       */
      req: number;
      offset: number;
    }
  | {
      op: 'commit';
      session: string;
      pilot: string;
      task: string;
      /**
       * Chosen by the agent; unique among its transfers.
       */
      transfer: string;
      /**
       * Request number, echoed in the reply.
       */
      req: number;
      bytes: number;
      sha256: string;
    }
  | {
      op: 'abort';
      session: string;
      pilot: string;
      task: string;
      /**
       * Chosen by the agent; unique among its transfers.
       */
      transfer: string;
      /**
       * Request number, echoed in the reply.
       */
      req: number;
    };
