import type { Clock, Timer } from '../../lib/clock';
import type {
  ExitedEvent,
  FailedEvent,
  KillSignal,
  SpawnSpec,
  StartedEvent,
} from '../../components/executor/effects';

/**
 * What the main agent asks one node's sub-agent to do, in one message: numbered, so that the
 * sub-agent's ack lets the hub forget it, and resent to a sub-agent that came back before it
 * acked (a restarted one, or the same one after a lost connection).
 */
export interface SubAgentOps {
  seq: number;
  spawn: SpawnSpec[];
  kill: { uid: string; signal: KillSignal }[];
}

/** An end its spawner helpers reported: an exit, or a start that failed. */
export type SubAgentEnd = ({ ev: 'exited' } & ExitedEvent) | ({ ev: 'failed' } & FailedEvent);

/**
 * What a sub-agent says when it (re)connects: who it is, and what its spawner helpers run and
 * ended lately (their `status`), so that the hub can account for every job it gave that node.
 */
export interface SubAgentHello {
  /** Changes when the sub-agent process is a new one (restarted). */
  incarnation: string;
  running: { uid: string; pid: number }[];
  ended: SubAgentEnd[];
}

/** The hub's effects: the shell sends, starts sub-agents and routes events to the Executor. */
export interface SubAgentHubEffects {
  send(node: string, ops: SubAgentOps): void;
  /** Starts a sub-agent on `node` (one launcher process, e.g. one srun step, for the pilot). */
  startSubAgent(node: string): void;
  /** Events of the Executor's jobs, under the task uids the Executor gave. */
  started(events: StartedEvent[]): void;
  exited(events: ExitedEvent[]): void;
  failed(events: FailedEvent[]): void;
  /** The sub-agents silent now, each since it was last heard (epoch ms); [] when none is. */
  silent(parts: { part: string; since: number }[]): void;
  /** A node whose sub-agent cannot be had any more: nothing should be placed there. */
  nodeLost(node: string, why: string): void;
}

export interface SubAgentHubOptions {
  nodes: readonly string[];
  /** Silent after this long without a word (its beats come every second). */
  silentAfterMs: number;
  /** Lost after this long: its jobs fail E_SUBAGENT_LOST and a new one is started. */
  lostAfterMs: number;
  /** Sub-agents started again per node after the first, before the node is given up. */
  maxRestarts: number;
}

interface Job {
  uid: string;
  node: string;
  started: boolean;
  /** The ops message it went out in, until that is acked. */
  seq: number;
  /**
   * Given by the agent before this one (adopt): its spec, until its node's hello says whether
   * its sub-agent ever had it (one it never had is sent now: it never ran).
   */
  adopted?: SpawnSpec;
}

interface Link {
  node: string;
  incarnation?: string;
  /** Heard since it was (re)started: ops go out, silence counts. */
  up: boolean;
  lastHeard: number;
  silent: boolean;
  nextSeq: number;
  /** Sent and not acked (or waiting for the sub-agent to be up), by seq. */
  outbox: Map<number, SubAgentOps>;
  /** What the next flush sends. */
  pending: SubAgentOps | undefined;
  restarts: number;
  given: boolean;
}

/** Most silent parts an agent_heartbeat carries (control-message.schema.json). */
const MAX_SILENT_PARTS = 1_000;

/** Why the hub fails a job it cannot account for. */
export const SUBAGENT_LOST = 'E_SUBAGENT_LOST';

/**
 * The main agent's side of its per-node sub-agents, as a pure core: which jobs went to which
 * node, what each sub-agent acked, and, when one comes back (restarted, or reconnected), which
 * of its jobs still run, which ended meanwhile (their ends delivered once) and which it cannot
 * account for (failed E_SUBAGENT_LOST: the Executor retries or fails them, attempt fencing
 * ignores whatever the lost attempt says later). Jobs are named on the wire by task uid and
 * attempt (`wireUid`), so an end kept by a helper from an earlier attempt is never taken for a
 * later one's.
 */
export class SubAgentHubCore {
  private readonly links = new Map<string, Link>();
  /** By wire uid. */
  private readonly jobs = new Map<string, Job>();
  /** Task uid -> its current wire uid (kill and signal name the task). */
  private readonly wireOf = new Map<string, string>();
  private timer: Timer | undefined;
  private stopped = false;

  constructor(
    private readonly effects: SubAgentHubEffects,
    private readonly clock: Clock,
    private readonly opts: SubAgentHubOptions,
  ) {
    for (const node of opts.nodes) {
      this.links.set(node, {
        node,
        up: false,
        lastHeard: clock.now(),
        silent: false,
        nextSeq: 1,
        outbox: new Map(),
        pending: undefined,
        restarts: 0,
        given: false,
      });
    }
  }

  /** Starts a sub-agent on every node and the silence watch. */
  onStart(): void {
    for (const l of this.links.values()) this.effects.startSubAgent(l.node);
    this.watch();
  }

  /** Whether `node` has a sub-agent to run jobs (not given up). */
  serves(node: string): boolean {
    const l = this.links.get(node);
    return l !== undefined && !l.given;
  }

  /**
   * Jobs the agent before this one gave sub-agents (this agent was started again): known as
   * started, so that each node's hello says whether they still run or ended meanwhile; one its
   * node's helpers never had (it died before it was sent, or before that sub-agent was up) is
   * sent now. Before onStart.
   */
  adopt(jobs: readonly { node: string; uid: string; attempt: number; spec: SpawnSpec }[]): void {
    for (const j of jobs) {
      if (!this.links.has(j.node)) continue;
      const wire = wireUid(j.uid, j.attempt);
      this.jobs.set(wire, { uid: j.uid, node: j.node, started: true, seq: 0, adopted: j.spec });
      this.wireOf.set(j.uid, wire);
    }
  }

  /** Queues a job for `node` (sent at the next flush). */
  spawn(node: string, spec: SpawnSpec, attempt: number): void {
    const l = this.links.get(node);
    if (l === undefined || l.given) {
      const why = l === undefined ? 'has no sub-agent' : 'lost its sub-agent';
      this.effects.failed([
        { uid: spec.uid, code: SUBAGENT_LOST, message: `node '${node}' ${why}` },
      ]);
      return;
    }
    const wire = wireUid(spec.uid, attempt);
    const ops = this.pendingOf(l);
    this.jobs.set(wire, { uid: spec.uid, node, started: false, seq: ops.seq });
    this.wireOf.set(spec.uid, wire);
    const wired: SpawnSpec = { ...spec, uid: wire };
    // a follow-on waits in its node's helper for the job it follows, named as that one is
    if (spec.after !== undefined) {
      const followed = this.wireOf.get(spec.after);
      if (followed !== undefined && this.jobs.get(followed)?.node === node) wired.after = followed;
      else delete wired.after;
    }
    ops.spawn.push(wired);
  }

  /** Queues a signal for a task's job; a task with no job on a sub-agent is ignored. */
  kill(uid: string, signal: KillSignal): boolean {
    const wire = this.wireOf.get(uid);
    const job = wire === undefined ? undefined : this.jobs.get(wire);
    if (wire === undefined || job === undefined) return false;
    this.pendingOf(this.links.get(job.node)!).kill.push({ uid: wire, signal });
    return true;
  }

  /** Sends what was queued since the last flush to the sub-agents that are up. */
  flush(): void {
    for (const l of this.links.values()) {
      const ops = l.pending;
      if (ops === undefined) continue;
      l.pending = undefined;
      l.outbox.set(ops.seq, ops);
      if (l.up) this.effects.send(l.node, ops);
    }
  }

  onAck(node: string, seq: number): void {
    const l = this.links.get(node);
    if (l === undefined) return;
    for (const s of l.outbox.keys()) if (s <= seq) l.outbox.delete(s);
    this.heard(l);
  }

  onBeat(node: string): void {
    const l = this.links.get(node);
    if (l !== undefined) this.heard(l);
  }

  /**
   * A sub-agent (re)connected and says what its helpers run and ended: the hub's jobs there are
   * accounted for, the unacked ops it does not already hold are sent again.
   */
  onHello(node: string, hello: SubAgentHello): void {
    const l = this.links.get(node);
    if (l === undefined || l.given || this.stopped) return;
    const running = new Map(hello.running.map((r) => [r.uid, r.pid]));
    const ended = new Map(hello.ended.map((e) => [e.uid, e]));
    const unacked = new Set(l.outbox.keys());
    const started: StartedEvent[] = [];
    const ends: SubAgentEnd[] = [];
    const lost: FailedEvent[] = [];
    for (const [wire, job] of this.jobs) {
      if (job.node !== node) continue;
      const pid = running.get(wire);
      const end = ended.get(wire);
      const adopted = job.adopted;
      delete job.adopted;
      if (pid !== undefined) {
        if (!job.started) started.push({ uid: wire, pid });
      } else if (end !== undefined) {
        ends.push(end);
      } else if (adopted !== undefined) {
        // its helpers keep what they ran and the last ends: this one never reached them
        const { after: _after, ...spec } = adopted;
        const ops = this.pendingOf(l);
        ops.spawn.push({ ...spec, uid: wire });
        job.seq = ops.seq;
      } else if (!unacked.has(job.seq) && l.pending?.seq !== job.seq) {
        const message = `the sub-agent on '${node}' came back without it: it was lost with its sub-agent`;
        lost.push({ uid: wire, code: SUBAGENT_LOST, message });
      }
    }
    l.incarnation = hello.incarnation;
    l.up = true;
    this.heard(l);
    this.onStarted(node, started);
    this.onEnded(node, ends);
    this.onEnded(
      node,
      lost.map((f) => ({ ev: 'failed', ...f })),
    );
    for (const ops of [...l.outbox.values()].sort((a, b) => a.seq - b.seq)) {
      const spawn = ops.spawn.filter((s) => !running.has(s.uid) && !ended.has(s.uid));
      const kill = ops.kill.filter((k) => running.has(k.uid) || spawn.some((s) => s.uid === k.uid));
      this.effects.send(node, { seq: ops.seq, spawn, kill });
    }
    if (l.pending !== undefined) this.flush();
  }

  onStarted(node: string, events: StartedEvent[]): void {
    const out: StartedEvent[] = [];
    for (const e of events) {
      const job = this.jobs.get(e.uid);
      if (job === undefined || job.node !== node || job.started) continue;
      job.started = true;
      out.push({ ...e, uid: job.uid });
    }
    if (out.length > 0) this.effects.started(out);
  }

  /** Ends of jobs: each delivered once, under its task uid. */
  onEnded(node: string, events: SubAgentEnd[]): void {
    const exited: ExitedEvent[] = [];
    const failed: FailedEvent[] = [];
    for (const e of events) {
      const job = this.jobs.get(e.uid);
      if (job === undefined || job.node !== node) continue;
      this.jobs.delete(e.uid);
      if (this.wireOf.get(job.uid) === e.uid) this.wireOf.delete(job.uid);
      const { ev, ...rest } = e;
      if (ev === 'exited') exited.push({ ...(rest as ExitedEvent), uid: job.uid });
      else failed.push({ ...(rest as FailedEvent), uid: job.uid });
    }
    if (exited.length > 0) this.effects.exited(exited);
    if (failed.length > 0) this.effects.failed(failed);
  }

  /** The launcher process of `node`'s sub-agent ended (its step is gone, and what ran in it). */
  onLauncherEnded(node: string, why: string): void {
    const l = this.links.get(node);
    if (l === undefined || this.stopped) return;
    this.lose(l, `the sub-agent on '${node}' ended (${why})`);
  }

  /** The pilot ends: nothing is restarted, silence is no longer watched. */
  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
  }

  /** Jobs on sub-agents, by node (for status and tests). */
  jobsOn(node: string): string[] {
    return [...this.jobs.values()].filter((j) => j.node === node).map((j) => j.uid);
  }

  private pendingOf(l: Link): SubAgentOps {
    l.pending ??= { seq: l.nextSeq++, spawn: [], kill: [] };
    return l.pending;
  }

  private heard(l: Link): void {
    l.lastHeard = this.clock.now();
    if (l.silent) {
      l.silent = false;
      this.saySilence();
    }
  }

  private watch(): void {
    const step = Math.max(50, Math.min(this.opts.silentAfterMs, this.opts.lostAfterMs) / 2);
    this.timer = this.clock.setTimeout(() => {
      if (this.stopped) return;
      this.check();
      this.watch();
    }, step);
  }

  private check(): void {
    const now = this.clock.now();
    let changed = false;
    for (const l of this.links.values()) {
      if (l.given) continue;
      const quiet = now - l.lastHeard;
      if (quiet >= this.opts.lostAfterMs) {
        const s = Math.round(quiet / 1000);
        this.lose(l, `no word from the sub-agent on '${l.node}' for ${s} s`);
        changed = true;
      } else if (quiet >= this.opts.silentAfterMs && !l.silent) {
        l.silent = true;
        changed = true;
      }
    }
    if (changed) this.saySilence();
  }

  /** Its jobs failed, its ops forgotten, and a new sub-agent started, or the node given up. */
  private lose(l: Link, why: string): void {
    const failed: SubAgentEnd[] = [];
    for (const [wire, job] of this.jobs) {
      if (job.node === l.node) {
        failed.push({ ev: 'failed', uid: wire, code: SUBAGENT_LOST, message: why });
      }
    }
    this.onEnded(l.node, failed);
    l.outbox.clear();
    l.pending = undefined;
    l.up = false;
    l.silent = false;
    l.lastHeard = this.clock.now();
    delete l.incarnation;
    if (l.restarts < this.opts.maxRestarts) {
      l.restarts++;
      this.effects.startSubAgent(l.node);
    } else {
      l.given = true;
      this.effects.nodeLost(l.node, `${why}; restarted ${l.restarts} times: given up`);
    }
    this.saySilence();
  }

  private saySilence(): void {
    // the longest silent first, as many as a heartbeat carries
    const parts = [...this.links.values()]
      .filter((l) => l.silent)
      .sort((a, b) => a.lastHeard - b.lastHeard)
      .slice(0, MAX_SILENT_PARTS)
      .map((l) => ({ part: `sub-agent ${l.node}`, since: l.lastHeard }));
    this.effects.silent(parts);
  }
}

/** A job's name on the wire: its task's uid and attempt. */
export function wireUid(uid: string, attempt: number): string {
  return `${uid}#${attempt}`;
}
