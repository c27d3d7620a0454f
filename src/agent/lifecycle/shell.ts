import { writeFileSync } from 'node:fs';
import type { Reason } from '../../generated';
import { errorMeta } from '../../errors';
import type { Clock } from '../../lib/clock';
import { PRIVATE_FILE } from '../../lib/private-files';
import type { Logger } from '../../lib/logger';
import type { QueueSet } from '../../components/shared/queue-set';
import type { ControlBus } from '../../transport/control-bus';
import type { UpdateWorker } from '../../updater/update-worker';
import type { AgentNotifications } from '../notifications';
import { untilPulled } from '../until-pulled';
import { AgentLifecycleCore, type AgentLifecycleOptions } from './core';
import type {
  AgentFinal,
  AgentLifecycleEffects,
  NoticeSignal,
  Shutdown,
  ShutdownStep,
} from './effects';
import type { AbortedTaskState } from '../../states/task-model';

/** What a shutdown takes apart; a part not built yet (a failed start) is skipped. */
export interface AgentParts {
  queues: QueueSet;
  notes?: AgentNotifications | undefined;
  workers: readonly UpdateWorker[];
  /** The store the workers write to themselves (MongoDB), closed after them. */
  store?: { close(): Promise<void> } | undefined;
  /** The task components, upstream first. */
  components: readonly (
    { onShutdown(final: AbortedTaskState, why: Reason, leaveToClient?: boolean): void } | undefined
  )[];
  pool?: { close(): Promise<void> } | undefined;
  control?: ControlBus | undefined;
  /** Looks where a silent client listens now (MongoDB sessions): stopped, then closed. */
  relocation?: { stop(): void; close(): Promise<void> } | undefined;
  /** The file channel: transfers still under way fail (E_TRANSFER) when it closes. */
  files?: { close(): Promise<void> } | undefined;
  /** Stops starting tasks at the drain point; `queued`: tasks that wait for slots. */
  scheduler?: { onDrain(): void; readonly queued: number } | undefined;
  /** Signals the running tasks (how many it signaled); `running`: tasks started and not ended. */
  executor?: { signalRunning(signal: NoticeSignal): number; running(): number } | undefined;
}

/** Runs AgentLifecycleCore: performs each shutdown step and reports it done. */
export class AgentLifecycleShell implements AgentLifecycleEffects {
  readonly core: AgentLifecycleCore;
  /** Resolves once the agent has shut down, with the pilot final state it suggests. */
  readonly done: Promise<{ final: AgentFinal; message: string }>;
  private resolveDone!: (r: { final: AgentFinal; message: string }) => void;
  private stopWaiting: (() => void) | undefined;
  /** What the drain point did: the signal and how many tasks got it. */
  private signaled: { signal: NoticeSignal; tasks: number } | undefined;

  constructor(
    private readonly parts: () => AgentParts,
    private readonly log: Logger,
    clock: Clock,
    private readonly opts: AgentLifecycleOptions,
  ) {
    this.done = new Promise((r) => (this.resolveDone = r));
    this.core = new AgentLifecycleCore(this, clock, opts);
  }

  shuttingDown(s: Shutdown): void {
    this.log.info('agent shutting down', { final: s.final, message: s.message });
    // a client that is away hears no agent_final: it reads this when it comes back
    const file = this.opts.endFile;
    try {
      if (file !== undefined) {
        const end = { final: s.final, message: s.message, at: Date.now() };
        writeFileSync(file, JSON.stringify(end) + '\n', { mode: PRIVATE_FILE });
      }
    } catch (e) {
      this.log.warn('the reason of the end not written', { file, ...errorMeta(e) });
    }
    this.parts().relocation?.stop(); // its connections go as they are
  }

  stopReceiving(): void {
    this.after('stopReceiving', () => this.parts().queues.stopReceiving());
  }

  drain(signal: NoticeSignal | undefined): void {
    const { scheduler, executor } = this.parts();
    scheduler?.onDrain();
    if (signal === undefined || executor === undefined) return;
    const tasks = executor.signalRunning(signal);
    this.signaled = { signal, tasks };
    this.log.info('pilot drains', { signal, tasks });
  }

  endSummary(): string {
    const { scheduler, executor } = this.parts();
    const returned = scheduler?.queued ?? 0;
    const killed = executor?.running() ?? 0;
    const s = this.signaled;
    const signaled = s === undefined ? '' : `, ${s.tasks} signaled ${s.signal} at the drain point`;
    return `drained: ${returned} waiting task(s) returned to the client, ${killed} running task(s) killed${signaled}`;
  }

  finalizeTasks(final: AbortedTaskState, why: Reason, leaveToClient: boolean): void {
    for (const component of this.parts().components) {
      try {
        component?.onShutdown(final, why, leaveToClient);
      } catch (e) {
        this.log.error('shutdown of a component failed', errorMeta(e));
      }
    }
    this.core.onStepDone('finalizeTasks');
  }

  closeSpawners(): void {
    this.after('closeSpawners', () => this.parts().pool?.close(), 'spawner pool close');
  }

  flushNotifications(): void {
    this.parts().notes?.flush();
    this.core.onStepDone('flushNotifications');
  }

  closeSenders(): void {
    const { queues, files } = this.parts();
    this.after('closeSenders', () => Promise.all([queues.closeSenders(), files?.close()]));
  }

  awaitUpdates(): void {
    const { workers, notes } = this.parts();
    this.stopWaiting = untilPulled(workers, notes?.count ?? 0, () =>
      this.core.onStepDone('awaitUpdates'),
    );
  }

  closeWorkers(ackWaitMs: number | undefined): void {
    this.stopWaiting?.(); // the core's bound may have ended the wait first
    const { workers, store } = this.parts();
    this.after('closeWorkers', async () => {
      await Promise.all(
        workers.map((w) => (ackWaitMs === undefined ? w.close() : w.close(ackWaitMs))),
      );
      await store?.close();
    });
  }

  closeQueues(): void {
    this.after('closeQueues', () => this.parts().queues.close());
  }

  publishHeartbeat(): void {
    // a lost beat is no error: the next one follows, and silence is what the client judges
    const silent = this.opts.silentParts?.() ?? [];
    void this.parts()
      .control?.publish({
        type: 'agent_heartbeat',
        pilot: this.opts.pilot,
        ...(silent.length > 0 ? { silent } : {}),
      })
      .catch(() => undefined);
  }

  publishFinal(final: AgentFinal, message: string): void {
    const { control } = this.parts();
    // the client may be gone: nobody to tell, and no error
    this.after('publishFinal', () =>
      control
        ?.publish({ type: 'agent_final', pilot: this.opts.pilot, final, message })
        .catch(() => undefined),
    );
  }

  closeControl(): void {
    const { control, relocation } = this.parts();
    this.after('closeControl', () => Promise.all([control?.close(), relocation?.close()]));
  }

  finished(final: AgentFinal, message: string): void {
    this.resolveDone({ final, message });
  }

  /** Runs a step's work and reports it done whatever its outcome (a failure is logged). */
  private after(
    step: ShutdownStep,
    work: () => Promise<unknown> | undefined,
    what: string = step,
  ): void {
    void Promise.resolve()
      .then(work)
      .catch((e: unknown) => this.log.error(`${what} failed`, errorMeta(e)))
      .then(() => this.core.onStepDone(step));
  }
}
