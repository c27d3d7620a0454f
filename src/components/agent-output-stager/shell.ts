import type { TaskRecord } from '../../generated';
import { readTails } from '../shared/sandbox-io';
import type { Notification } from '../../states/notification';
import { sendLogged } from '../shared/shell';
import type { ShellDeps } from '../shared/shell-deps';
import { AgentOutputStagerCore } from './core';
import type { AgentOutputStagerEffects } from './effects';

/** Runs AgentOutputStagerCore: reads the output tails and hands tasks back to the client. */
export class AgentOutputStagerShell implements AgentOutputStagerEffects {
  readonly core: AgentOutputStagerCore;

  constructor(private readonly deps: ShellDeps) {
    this.core = new AgentOutputStagerCore(this, deps.clock);
  }

  notify(notifications: Notification[]): void {
    this.deps.notes.send(notifications);
  }

  forward(tasks: TaskRecord[]): void {
    sendLogged(this.deps.next, tasks, this.deps.log, 'forward');
  }

  collect(tasks: TaskRecord[]): void {
    readTails(tasks, (results) => this.core.onCollected(results));
  }
}
