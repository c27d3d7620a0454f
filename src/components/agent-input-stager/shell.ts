import type { TaskRecord } from '../../generated';
import { Limiter } from '../../lib/limiter';
import { errorMeta } from '../../errors';
import { makeSandboxes } from '../shared/sandbox-io';
import type { Notification } from '../../states/notification';
import { sendLogged } from '../shared/shell';
import type { ShellDeps } from '../shared/shell-deps';
import { STAGING_CONCURRENCY, stageEach } from '../shared/staging-io';
import type { StagingStep } from '../shared/staging-paths';
import type { Transfers } from '../shared/transfers';
import { madeAtSpawn } from '../shared/workdir';
import { AgentInputStagerCore, DEFAULT_OUTPUT, type OutputMode } from './core';
import type { AgentInputStagerEffects } from './effects';

/** Runs AgentInputStagerCore: makes the sandboxes and performs input directives here. */
export class AgentInputStagerShell implements AgentInputStagerEffects {
  readonly core: AgentInputStagerCore;
  private readonly limiter = new Limiter(STAGING_CONCURRENCY);

  constructor(
    private readonly deps: ShellDeps,
    private readonly pilotSandbox: string,
    /** The `transfer` action's way to the client; none: such directives fail the task. */
    private readonly transfers?: Transfers,
    /** The pilot's agent.output and agent.taskJson; taskRoot: where own directories go. */
    private readonly opts: { output: OutputMode; taskJson: boolean; taskRoot?: string } = {
      output: DEFAULT_OUTPUT,
      taskJson: false,
    },
  ) {
    const root = opts.taskRoot ?? pilotSandbox;
    this.core = new AgentInputStagerCore(this, deps.clock, pilotSandbox, opts.output, root);
  }

  notify(notifications: Notification[]): void {
    this.deps.notes.send(notifications);
  }

  forward(tasks: TaskRecord[]): void {
    sendLogged(this.deps.next, tasks, this.deps.log, 'forward');
  }

  stage(tasks: TaskRecord[]): void {
    // a task the core gave the pilot's sandbox has nothing to make; one whose spawner helper
    // makes it as it starts the task neither (unless its task.json goes in first)
    const atSpawn = (t: TaskRecord): boolean => !this.opts.taskJson && madeAtSpawn(t.description);
    const shared = (t: TaskRecord): boolean => t.sandbox === this.pilotSandbox || atSpawn(t);
    const made = (results: Parameters<AgentInputStagerCore['onStaged']>[0]): void =>
      this.core.onStaged(results);
    makeSandboxes(tasks, made, shared, this.opts.taskJson);
  }

  stageInput(work: { uid: string; steps: StagingStep[] }[]): void {
    const opts = {
      limiter: this.limiter,
      direction: 'input' as const,
      transfers: this.transfers,
      all: false,
    };
    stageEach(work, opts, (uid, failures) => {
      try {
        this.core.onInputStaged([{ uid, failures }]);
      } catch (e) {
        this.deps.log.error('input staging result not taken', { uid, ...errorMeta(e) });
      }
    });
  }
}
