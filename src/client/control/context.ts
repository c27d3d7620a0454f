import type { Logger } from '../../lib/logger';
import type { SandboxAsks } from '../files/sandbox-asks';
import type { ExplainSource } from '../tasks/explain';
import type { TaskRegistry } from '../tasks/registry';
import type { Managers } from './managers';

/** What the control handlers read of the session's runtime (a ClientRuntime is one). */
export interface ControlRuntime extends ExplainSource {
  /** The session's uid and directory. */
  readonly uid: string;
  readonly dir: string;
  /** Every task of the session, in submission order. */
  readonly tasks: TaskRegistry;
  /** Where a handler that fails is logged. */
  readonly log: Logger;
  /** The pilots' file channels: `sandbox` looks into a pilot's sandbox through its agent. */
  readonly links: ExplainSource['links'] & {
    readonly files?: { readonly sandbox: Pick<SandboxAsks, 'ask'> };
  };
}

/**
 * Everything a control handler uses, whatever transport asked: the Session makes one when it
 * opens and hands it to its Unix control socket (server.ts); a server on another transport (an
 * HTTP API) is handed the same and calls the same table (handlers.ts) through dispatchControl.
 */
export interface ControlContext {
  readonly runtime: ControlRuntime;
  /** The session's managers: `status` lists their pilots, `cancel` goes through their tasks'. */
  readonly managers: Managers;
  /** True once the session has begun to close: `status` says `closing`, `cancel` is refused. */
  closing(): boolean;
}
