import { spawn, type ChildProcess } from 'node:child_process';
import {
  promises as fsp,
  openSync,
  closeSync,
  readFileSync,
  readlinkSync,
  realpathSync,
} from 'node:fs';
import * as os from 'node:os';
import type { AgentConfig, PilotDescription } from '../../generated';
import { errorMeta } from '../../errors';
import { compiledSibling } from '../../lib/dist-path';
import type { Logger } from '../../lib/logger';
import { readTail } from '../../lib/file-tail';
import { nvidiaGpus } from '../../lib/gpus';
import { FINAL_PILOT_STATES, type FinalPilotState } from '../../states/pilot-model';
import {
  AGENT_END_FILE,
  type AgentExit,
  type Capacity,
  type LaunchEvents,
  type PilotLauncher,
} from './launcher';
import type { PilotRecord } from './pilot-record';
import { PRIVATE_FILE, makePrivateDirAsync } from '../../lib/private-files';

/**
 * Starts an agent as a child process of the client: its config in the pilot sandbox, its
 * stdout/stderr in agent.out/agent.err there, in a session of its own. It outlives a client
 * that dies for as long as its client timeout (heartbeats), so a resumed client finds it;
 * such a client adopts it by pid (`adopt`) and, not being its parent, watches it with a
 * signal-0 probe.
 */
export class LocalLauncher implements PilotLauncher {
  private readonly children = new Map<string, ChildProcess>();
  private readonly adopted = new Map<
    string,
    { pid: number; sandbox: string; timer: NodeJS.Timeout }
  >();
  private readonly agentMain = compiledSibling(__dirname, '../../agent/main');

  constructor(
    private readonly events: LaunchEvents,
    private readonly log: Logger,
    /** How often an adopted agent is probed. */
    private readonly probeMs = 250,
  ) {}

  /**
   * `cores` (default: every core of this machine) and `gpus` (default: every NVIDIA GPU the
   * driver lists here, numbered 0..n-1 as CUDA numbers them; none without the driver).
   */
  capacities(descriptions: PilotDescription[]): Promise<Capacity[]> {
    return Promise.resolve(
      descriptions.map((d) => ({
        cores: d.cores ?? os.cpus().length,
        gpus: d.gpus ?? nvidiaGpus(),
      })),
    );
  }

  agentConfig(_pilot: PilotRecord, common: AgentConfig): AgentConfig {
    return { ...common, resource: 'local' };
  }

  launch(pilot: PilotRecord, cfg: AgentConfig): void {
    void this.start(pilot, cfg).catch((e: unknown) => {
      this.log.error('agent launch failed', { pilot: pilot.uid, ...errorMeta(e) });
      this.events.launchFailed(pilot.uid, { message: (e as Error).message });
    });
  }

  kill(uid: string): void {
    const child = this.children.get(uid);
    if (child?.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    const adopted = this.adopted.get(uid);
    if (adopted !== undefined && isAgent(adopted.pid, adopted.sandbox)) {
      signal(adopted.pid, 'SIGKILL');
    }
  }

  /**
   * Follows an agent started by a previous client of the session. There is no exit event for
   * a process that is not our child, so it is probed every `probeMs`; its exit status is
   * unknown (reported as null).
   */
  adopt(pilot: PilotRecord, trace: { pid?: number }): void {
    const { uid, sandbox } = pilot;
    const pid = trace.pid;
    if (pid === undefined) return; // no agent was started: the core failed the pilot
    const check = (): void => {
      if (isAgent(pid, sandbox)) return;
      clearInterval(timer);
      this.adopted.delete(uid);
      void readTail(`${sandbox}/agent.err`, 1_024).then((stderr) =>
        this.events.agentExited(uid, { exitCode: null, signal: null, stderr, said: said(sandbox) }),
      );
    };
    const timer = setInterval(check, this.probeMs);
    timer.unref();
    this.adopted.set(uid, { pid, sandbox, timer });
    check();
  }

  /** Stops probing adopted agents (the session is closing). */
  close(): void {
    for (const a of this.adopted.values()) clearInterval(a.timer);
    this.adopted.clear();
  }

  private async start(pilot: PilotRecord, cfg: AgentConfig): Promise<void> {
    await makePrivateDirAsync(pilot.sandbox);
    const cfgFile = `${pilot.sandbox}/${AGENT_CONFIG}`;
    await fsp.writeFile(cfgFile, JSON.stringify(cfg, null, 2), { mode: PRIVATE_FILE });
    const out = openSync(`${pilot.sandbox}/agent.out`, 'a', PRIVATE_FILE);
    const err = openSync(`${pilot.sandbox}/agent.err`, 'a', PRIVATE_FILE);
    let child: ChildProcess;
    try {
      // own session: a Ctrl-C or a kill of the client's process group does not reach it; run
      // in its sandbox, so that its command line (which `ps` shows everyone) names no session
      child = spawn(process.execPath, [this.agentMain, AGENT_CONFIG], {
        stdio: ['ignore', out, err],
        detached: true,
        cwd: pilot.sandbox,
      });
    } finally {
      closeSync(out);
      closeSync(err);
    }
    this.children.set(pilot.uid, child);
    child.once('spawn', () => this.events.launched(pilot.uid, { pid: child.pid! }));
    child.once('error', (e) => {
      if (child.pid === undefined) this.events.launchFailed(pilot.uid, { message: e.message });
    });
    child.once('exit', (exitCode, signal) => {
      this.children.delete(pilot.uid);
      void readTail(`${pilot.sandbox}/agent.err`, 1_024).then((stderr) =>
        this.events.agentExited(pilot.uid, {
          exitCode,
          signal,
          stderr,
          said: said(pilot.sandbox),
        }),
      );
    });
  }
}

/** The agent's bootstrap file in its sandbox, named relative to it on its command line. */
const AGENT_CONFIG = 'agent.json';

/**
 * Whether `pid` still is the agent of `sandbox`: alive, not a zombie nobody reaps, and not
 * another process that got the pid after the agent's end (its command names agent.json and it
 * runs in `sandbox`; an agent of an older client named the whole path).
 */
function isAgent(pid: number, sandbox: string): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) return false;
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    if (args.includes(`${sandbox}/${AGENT_CONFIG}`)) return true;
    return (
      args.includes(AGENT_CONFIG) && readlinkSync(`/proc/${pid}/cwd`) === realpathSync(sandbox)
    );
  } catch {
    return false;
  }
}

/** Sends a signal; false when the process is gone. */
function signal(pid: number, sig: NodeJS.Signals | 0): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Why the agent of `sandbox` ended, as it wrote there (AGENT_END_FILE), or undefined: none
 * written (it was killed first), or not of the agent's form.
 */
function said(sandbox: string): AgentExit['said'] {
  try {
    const e = JSON.parse(readFileSync(`${sandbox}/${AGENT_END_FILE}`, 'utf8')) as {
      final?: unknown;
      message?: unknown;
    };
    const finals: readonly unknown[] = FINAL_PILOT_STATES;
    if (!finals.includes(e.final) || typeof e.message !== 'string') return undefined;
    return { final: e.final as FinalPilotState, message: e.message.slice(0, 2_000) };
  } catch {
    return undefined;
  }
}
