/* Generated from schemas/control-request.schema.json by scripts/gen-types.js: do not edit. */

/**
 * A request on a session's control socket (<session dir>/control.sock): one JSON object per line, answered by one reply line (docs/cli.md).
 */
export type ControlRequest =
  | {
      /**
       * The session now: pilots, task counts per state, running tasks, the oldest pending tasks with why they wait.
       */
      op: 'status';
      /**
       * Echoed in the reply, to match replies to requests.
       */
      id?: number | string;
      /**
       * How many of the oldest pending tasks to explain (default 5).
       */
      pending?: number;
      /**
       * How many running tasks to list (default 20).
       */
      running?: number;
    }
  | {
      /**
       * Why a task is where it is (tmgr.explain).
       */
      op: 'explain';
      /**
       * Echoed in the reply, to match replies to requests.
       */
      id?: number | string;
      /**
       * The task's uid.
       */
      uid: string;
    }
  | {
      /**
       * Cancels tasks, as tmgr.cancelTasks does.
       */
      op: 'cancel';
      /**
       * Echoed in the reply, to match replies to requests.
       */
      id?: number | string;
      /**
       * The tasks to cancel (any of the session's TaskManagers).
       *
       * @minItems 1
       * @maxItems 100000
       */
      uids: [string, ...string[]];
    }
  | {
      /**
       * A look into a pilot's sandbox through its agent's file channel (docs/output.md).
       */
      op: 'sandbox';
      /**
       * Echoed in the reply, to match replies to requests.
       */
      id?: number | string;
      /**
       * The pilot's uid.
       */
      pilot: string;
      /**
       * stat: a regular file's size; read: its bytes at `offset`; list: a directory's names.
       */
      look: 'stat' | 'read' | 'list';
      /**
       * Absolute and normalized, inside the pilot's sandbox.
       */
      path: string;
      /**
       * read: where to start (default 0).
       */
      offset?: number;
      /**
       * read: at most this many bytes.
       */
      length?: number;
    };
