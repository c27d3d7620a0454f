import type { TaskRecord } from '../../generated';
import { makeSandboxes } from '../shared/sandbox-io';
import type { Notification } from '../../states/notification';
import { sendLogged } from '../shared/shell';
import type { ShellDeps } from '../shared/shell-deps';
import { AgentInputStagerCore } from './core';
import type { AgentInputStagerEffects } from './effects';

/** Runs AgentInputStagerCore: makes the sandboxes on this node's filesystem. */
export class AgentInputStagerShell implements AgentInputStagerEffects {
  readonly core: AgentInputStagerCore;

  constructor(
    private readonly deps: ShellDeps,
    pilotSandbox: string,
  ) {
    this.core = new AgentInputStagerCore(this, deps.clock, pilotSandbox);
  }

  notify(notifications: Notification[]): void {
    this.deps.notes.send(notifications);
  }

  forward(tasks: TaskRecord[]): void {
    sendLogged(this.deps.next, tasks, this.deps.log, 'forward');
  }

  stage(tasks: TaskRecord[]): void {
    makeSandboxes(tasks, (results) => this.core.onStaged(results));
  }
}
