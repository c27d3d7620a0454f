import type { Reason, TaskRecord } from '../generated';
import type { Clock } from '../lib/clock';
import type { Logger } from '../lib/logger';
import type { Notification } from '../states/notification';
import { COMPONENTS } from '../states/task-model';
import { ManagerInputStagerCore } from '../components/manager-input-stager/core';
import { ManagerOutputStagerCore } from '../components/manager-output-stager/core';
import { ManagerSchedulerCore, type PilotCapacity } from '../components/manager-scheduler/core';
import { QueueSet } from '../components/shared/queue-set';
import { sendLogged } from '../components/shared/shell';
import { Bridge } from '../transport/bridge';
import { QueueSender } from '../transport/queue';

/**
 * The client-side components: ManagerScheduler -> ManagerInputStager -> (agents) ->
 * ManagerOutputStager, over queues. Agents connect to `outputAddress` and to their pilot's
 * input queue, which this pipeline creates per pilot.
 */
export class ManagerPipeline {
  private readonly queues = new QueueSet();
  private readonly pilotInputs = new Map<string, { bridge: Bridge; sender: QueueSender }>();
  /** Tasks handed to each pilot's agent and not yet back: the owner-of-last-resort's list. */
  private readonly outstanding = new Map<string, Set<string>>();
  private readonly closing: Promise<void>[] = [];
  private scheduler!: ManagerSchedulerCore;
  private inputStager!: ManagerInputStagerCore;
  private outputStager!: ManagerOutputStagerCore;
  private toScheduler!: QueueSender;
  /** Where agents push tasks back (a bridge's `in`). */
  outputAddress = '';

  constructor(
    private readonly session: string,
    private readonly notify: (ns: Notification[]) => void,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** Where agent-facing queues listen, e.g. `tcp://127.0.0.1:0`. */
    private readonly listenAt: string,
  ) {}

  /** `outputIn`: where agents push tasks back (a resumed session binds its old address). */
  async start(outputIn?: string): Promise<void> {
    const sched = await Bridge.queue(
      `inproc://${this.session}/tmgr-scheduling/in`,
      `inproc://${this.session}/tmgr-scheduling/out`,
    );
    const staging = await Bridge.queue(
      `inproc://${this.session}/tmgr-staging-input/in`,
      `inproc://${this.session}/tmgr-staging-input/out`,
    );
    const output = await Bridge.queue(outputIn ?? this.listenAt, this.listenAt);
    this.queues.addBridges(sched, staging, output);
    this.outputAddress = output.endpoints.in;
    this.toScheduler = this.queues.sender(sched.endpoints.in);
    const toStaging = this.queues.sender(staging.endpoints.in);

    const logS = this.log.child({ component: COMPONENTS.managerScheduler });
    this.scheduler = new ManagerSchedulerCore(
      { notify: this.notify, forward: (ts) => sendLogged(toStaging, ts, logS, 'forward') },
      this.clock,
    );
    const logI = this.log.child({ component: COMPONENTS.managerInputStager });
    this.inputStager = new ManagerInputStagerCore(
      {
        notify: this.notify,
        forwardToPilot: (pilot, ts) => {
          const q = this.pilotInputs.get(pilot);
          if (q === undefined) {
            logI.error('no input queue for pilot', { pilot, uids: ts.map((t) => t.uid) });
            return;
          }
          let out = this.outstanding.get(pilot);
          if (out === undefined) this.outstanding.set(pilot, (out = new Set()));
          for (const t of ts) out.add(t.uid);
          sendLogged(q.sender, ts, logI, 'forward to agent');
        },
      },
      this.clock,
    );
    const logO = this.log.child({ component: COMPONENTS.managerOutputStager });
    this.outputStager = new ManagerOutputStagerCore({ notify: this.notify }, this.clock);

    const intake = (component: string, arrives: string, handle: (t: TaskRecord[]) => void) => ({
      component,
      arrives,
      handle,
      notify: this.notify,
      now: () => this.clock.now(),
    });
    const C = COMPONENTS;
    this.queues.consume(
      sched.endpoints.out,
      intake(C.managerScheduler, 'TMGR_SCHEDULING_PENDING', (ts) => this.scheduler.onTasks(ts)),
      logS,
    );
    this.queues.consume(
      staging.endpoints.out,
      intake(C.managerInputStager, 'TMGR_STAGING_INPUT_PENDING', (ts) =>
        this.inputStager.onTasks(ts),
      ),
      logI,
    );
    this.queues.consume(
      output.endpoints.out,
      intake(C.managerOutputStager, 'TMGR_STAGING_OUTPUT_PENDING', (ts) => {
        for (const t of ts) if (t.pilot !== undefined) this.outstanding.get(t.pilot)?.delete(t.uid);
        this.outputStager.onTasks(ts);
      }),
      logO,
    );
  }

  /** Hands new tasks (in TMGR_SCHEDULING_PENDING) to the ManagerScheduler. */
  submit(tasks: TaskRecord[]): Promise<void> {
    return this.toScheduler.send(tasks);
  }

  /**
   * Creates the queue a pilot's agent pulls its tasks from; returns its address (`at`: the
   * address its agent already knows, for a resumed session).
   */
  async addPilotQueue(pilot: string, at?: string): Promise<string> {
    const bridge = await Bridge.queue(this.listenAt, at ?? this.listenAt);
    this.pilotInputs.set(pilot, { bridge, sender: new QueueSender(bridge.endpoints.in) });
    return bridge.endpoints.out;
  }

  /**
   * A resumed session takes its tasks back where they were: `agent` ones are held by the
   * pilot's agent (the owner of last resort remembers them), `toAgent` ones may have been lost
   * on the way and are sent again (the agent drops ones it already has), `output` ones may
   * have been lost on their way back and are staged out again (a second copy that arrives
   * from the agent later repeats only notifications the store already has).
   */
  adopt(
    pilot: string,
    tasks: { agent: string[]; toAgent: TaskRecord[]; output: TaskRecord[] },
  ): void {
    let out = this.outstanding.get(pilot);
    if (out === undefined) this.outstanding.set(pilot, (out = new Set()));
    for (const uid of tasks.agent) out.add(uid);
    for (const t of tasks.toAgent) out.add(t.uid);
    const q = this.pilotInputs.get(pilot);
    if (tasks.toAgent.length > 0 && q !== undefined) {
      sendLogged(q.sender, tasks.toAgent, this.log, 'resend to agent');
    }
    if (tasks.output.length > 0) this.outputStager.onTasks(tasks.output);
  }

  addPilot(p: PilotCapacity): void {
    this.scheduler.onPilotAdded(p);
  }

  /** What a pilot's agent reported it holds (only for pilots added to a TaskManager). */
  pilotCapacity(p: PilotCapacity): void {
    this.scheduler.onPilotCapacity(p);
  }

  pilotGone(uid: string, state: string): void {
    this.scheduler.onPilotGone(uid);
    this.inputStager.onPilotGone(uid, state);
    const q = this.pilotInputs.get(uid);
    if (q !== undefined) {
      this.pilotInputs.delete(uid);
      this.closing.push(q.sender.close().then(() => q.bridge.close()));
    }
  }

  /** Uids sent to a pilot's agent that never came back (call once the pilot has ended). */
  unreturned(pilot: string): string[] {
    const out = this.outstanding.get(pilot);
    this.outstanding.delete(pilot);
    return out === undefined ? [] : [...out];
  }

  cancel(uids: string[]): void {
    this.scheduler.onCancel(uids);
    this.inputStager.onCancel(uids);
    this.outputStager.onCancel(uids);
  }

  shutdown(final: 'FAILED' | 'CANCELED', why: Reason): void {
    this.scheduler.onShutdown(final, why);
  }

  async close(): Promise<void> {
    await this.queues.stopReceiving();
    for (const { bridge, sender } of this.pilotInputs.values()) {
      await sender.close();
      await bridge.close();
    }
    await Promise.allSettled(this.closing);
    await this.queues.close();
  }
}
