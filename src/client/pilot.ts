import type { PilotDescription, Reason } from '../generated';
import { labelsOfNode, type NodeLabels } from '../components/shared/node-labels';
import { isFinalPilotState, type PilotState } from '../states/pilot-model';

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

  get final(): boolean {
    return isFinalPilotState(this.state);
  }
}
