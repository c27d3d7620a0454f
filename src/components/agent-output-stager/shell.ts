import { errorMeta } from '../../errors';
import type { TaskRecord } from '../../generated';
import { Limiter } from '../../lib/limiter';
import type { HandBack } from '../../lib/validate';
import { readTails, removeEmptyDirs } from '../shared/sandbox-io';
import type { Notification } from '../../states/notification';
import { sendLogged } from '../shared/shell';
import type { ShellDeps } from '../shared/shell-deps';
import { STAGING_CONCURRENCY, stageEach } from '../shared/staging-io';
import type { StagingStep } from '../shared/staging-paths';
import type { Transfers } from '../shared/transfers';
import { AgentOutputStagerCore } from './core';
import type { AgentOutputStagerEffects } from './effects';

/** Runs AgentOutputStagerCore: reads the output tails, performs output directives, hands back. */
export class AgentOutputStagerShell implements AgentOutputStagerEffects {
  readonly core: AgentOutputStagerCore;
  private readonly limiter = new Limiter(STAGING_CONCURRENCY);

  constructor(
    private readonly deps: ShellDeps,
    pilotSandbox: string,
    /** The `transfer` action's way to the client; none: such directives fail. */
    private readonly transfers?: Transfers,
  ) {
    this.core = new AgentOutputStagerCore(this, deps.clock, pilotSandbox);
  }

  notify(notifications: Notification[]): void {
    this.deps.notes.send(notifications);
  }

  /** Hands tasks back to the client without their descriptions: it holds them (HandBack). */
  forward(tasks: TaskRecord[]): void {
    sendLogged(this.deps.next, tasks.map(handBackOf), this.deps.log, 'hand back');
  }

  collect(tasks: TaskRecord[]): void {
    readTails(tasks, (results) => this.core.onCollected(results));
  }

  removeIfEmpty(dirs: string[]): void {
    removeEmptyDirs(dirs);
  }

  stageOutput(work: { uid: string; steps: StagingStep[] }[]): void {
    const opts = {
      limiter: this.limiter,
      direction: 'output' as const,
      transfers: this.transfers,
      all: true,
    };
    stageEach(work, opts, (uid, failures) => {
      try {
        this.core.onOutputStaged([{ uid, failures }]);
      } catch (e) {
        this.deps.log.error('output staging result not taken', { uid, ...errorMeta(e) });
      }
    });
  }
}

function handBackOf(task: TaskRecord): HandBack {
  const { description: _description, ...back } = task;
  return back;
}
