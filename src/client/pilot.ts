import type { ControlMessage, PilotDescription, PilotLiveness, Reason } from '../generated';
import type { AgentStartup } from '../generated/control-message';
import { labelsOfNode, type NodeLabels } from '../components/shared/node-labels';
import { isFinalPilotState, type PilotState } from '../states/pilot-model';

type AgentReady = Extract<ControlMessage, { type: 'agent_ready' }>;

export type { AgentStartup };

/** A pilot as the client sees it. */
export class Pilot {
  state: PilotState = 'NEW';
  reason?: Reason;
  readonly history: { state: PilotState; inferred: boolean; ts?: number }[] = [];
  /** The nodes its agent reported (empty until the pilot is active). */
  nodes: { name: string; cores: number; gpus: number }[] = [];
  /**
   * What its agent said is not as asked, once per agent start (empty until then): task limits
   * it cannot enforce on its node, resources beyond the machine's, task directories kept in the
   * sandbox, a job end it cannot read; and what it found since, as it found it: function
   * workers that cannot start.
   */
  warnings: string[] = [];
  /**
   * When it drains (ms since the epoch): it starts no task after, and ends soon after (its
   * runtime limit or batch job's end, less `signalBeforeEnd`). Undefined until its agent
   * reported, and for a pilot whose time does not run.
   */
  drainsAt?: number;
  /**
   * How its agent's start went (its first report): when each phase was done, in ms since the
   * agent's process started: `process` (Node up, the agent's code loaded), `config`, `store`
   * (update workers up), `resources` (launch methods probed, meanwhile), `helpers` (spawner
   * helpers and cgroups), `control` (linked to the client), `ready`. Undefined until reported.
   */
  startup?: AgentStartup;
  private live: PilotLiveness = { state: 'ok', silentParts: [] };

  constructor(
    readonly uid: string,
    readonly description: PilotDescription,
    /** Cores and GPUs the pilot holds (what was asked, then what its agent reported). */
    public cores: number,
    public gpus: number,
    readonly sandbox: string,
  ) {}

  /** Its nodes' names and labels (tasks' placement), once its agent reported them. */
  labelledNodes(): NodeLabels[] | undefined {
    if (this.nodes.length === 0) return undefined;
    const { labels, nodeLabels } = this.description;
    return this.nodes.map((n) => ({
      name: n.name,
      labels: labelsOfNode(n.name, labels, nodeLabels),
    }));
  }

  /**
   * Whether its agent is heard, while the pilot is PMGR_ACTIVE (undefined in any other state):
   * `unknown` once no heartbeat came for 3 heartbeat periods (3 s, or half of
   * `agent.clientTimeoutS` where that is shorter), with `since` the time its agent was last
   * heard (ms since the epoch), until it is heard again (`ok`) or declared lost (FAILED,
   * E_AGENT_SILENT, after `agent.clientTimeoutS`). `silentParts`: the parts its agent reports
   * it has not heard from (sub-agents, `{ part: 'sub-agent n3', since }`), as of its last
   * heartbeat: a part can be silent while the pilot is `ok`. A copy: changing it changes nothing.
   */
  get liveness(): PilotLiveness | undefined {
    if (this.state !== 'PMGR_ACTIVE') return undefined;
    const { silentParts, ...rest } = this.live;
    return { ...rest, silentParts: silentParts.map((p) => ({ ...p })) };
  }

  /**
   * Its agent reported in (agent_ready, at `now`): what it found wrong, when it drains, how its
   * start went (kept from its first report: a report to a resumed client is not a start).
   * @internal
   */
  reportedIn(msg: AgentReady, now: number): void {
    this.warnings = [...(msg.warnings ?? [])];
    if (msg.drainInMs !== undefined) this.drainsAt = now + msg.drainInMs;
    else delete this.drainsAt;
    if (msg.startupMs !== undefined) this.startup ??= { ...msg.startupMs };
  }

  /**
   * Its PilotManager sets what the PilotLauncher decided of its agent's silence.
   * @internal
   */
  setLiveness(liveness: PilotLiveness): void {
    this.live = liveness;
  }

  get final(): boolean {
    return isFinalPilotState(this.state);
  }
}
