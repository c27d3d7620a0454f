import type { ControlMessage, WaitReason } from '../../generated';
import type { Estimate } from '../../components/agent-scheduler/start-plan';
import { BadMessages } from '../../lib/bad-messages';
import type { Logger } from '../../lib/logger';

type AgentWaitsMessage = Extract<ControlMessage, { type: 'agent_waits' }>;

/** The reason one pilot's agent gave for the waiting tasks of one shape. */
export interface ShapeReason {
  /** The shape's first waiting task, and its attempt. */
  task: string;
  attempt: number;
  reason: WaitReason;
  /** Estimated starts of the shape's first waiting tasks (epoch ms), from the agent's plan. */
  starts?: { task: string; attempt: number; at: number }[];
  /** Why the shape's other waiting tasks have no estimated start. */
  noEstimate?: string;
}

/** When a waiting task is expected to start, as its agent planned it, or why it cannot say. */
export type StartEstimate = Estimate;

/**
 * What each pilot's agent last said of its waiting tasks (`agent_waits`, over the pilot's own
 * control uplink, checked against the schema there): one reason per shape (tasks that ask exactly
 * the same). An entry must name a task attempt given to that pilot and not fenced since (a lost
 * pilot's word on an older attempt is refused and counted); a pilot's reasons go when its agent
 * ends. explain() reads them while the task is in AGENT_SCHEDULING on that pilot.
 */
export class AgentWaits {
  private readonly byPilot = new Map<string, Map<string, ShapeReason>>();
  private readonly bad: BadMessages;
  private refusedCount = 0;

  constructor(
    /** Whether this attempt of `uid` was given to `pilot` and not fenced since. */
    private readonly owns: (pilot: string, uid: string, attempt: number) => boolean,
    log: Logger,
  ) {
    this.bad = new BadMessages(log);
  }

  /** Hears the session's control messages (uplinks deliver agents' ones, already checked). */
  readonly hear = (msg: ControlMessage): void => {
    if (msg.type === 'agent_waits') this.take(msg);
    else if (msg.type === 'agent_final') this.byPilot.delete(msg.pilot);
  };

  /** The reason `pilot` gave for the waiting tasks of `shape`, if any. */
  get(pilot: string, shape: string): ShapeReason | undefined {
    return this.byPilot.get(pilot)?.get(shape);
  }

  /** The estimated start of attempt `attempt` of `uid`, waiting in `shape` at `pilot`. */
  estimate(pilot: string, shape: string, uid: string, attempt: number): StartEstimate | undefined {
    const said = this.get(pilot, shape);
    if (said === undefined) return undefined;
    const s = said.starts?.find((x) => x.task === uid);
    if (s !== undefined) return s.attempt === attempt ? { at: s.at } : undefined;
    return said.noEstimate !== undefined ? { none: said.noEstimate } : undefined;
  }

  /** Entries refused so far (naming a task the pilot was not given, or an older attempt). */
  get refused(): number {
    return this.refusedCount;
  }

  private take(msg: AgentWaitsMessage): void {
    let shapes = this.byPilot.get(msg.pilot);
    if (shapes === undefined) {
      this.byPilot.set(msg.pilot, (shapes = new Map<string, ShapeReason>()));
    }
    for (const w of msg.waits) {
      if (w.reason === undefined) {
        shapes.delete(w.shape);
        continue;
      }
      if (w.task === undefined || w.attempt === undefined) {
        this.refuse(msg.pilot, w.shape, 'a reason names no task');
        continue;
      }
      if (!this.owns(msg.pilot, w.task, w.attempt)) {
        this.refuse(msg.pilot, w.shape, `task ${w.task} (attempt ${w.attempt}) is not held by it`);
        shapes.delete(w.shape);
        continue;
      }
      const { task, attempt, reason, starts, noEstimate } = w;
      shapes.set(w.shape, {
        task,
        attempt,
        reason,
        ...(starts !== undefined ? { starts } : {}),
        ...(noEstimate !== undefined ? { noEstimate } : {}),
      });
    }
    if (shapes.size === 0) this.byPilot.delete(msg.pilot);
  }

  private refuse(pilot: string, shape: string, problem: string): void {
    this.refusedCount++;
    this.bad.report('waiting reason refused', { pilot, shape, problem });
  }
}
