import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fsp, openSync, closeSync } from 'node:fs';
import type { AgentConfig } from '../../generated';
import { errorMeta } from '../../errors';
import { compiledSibling } from '../../lib/dist-path';
import type { Logger } from '../../lib/logger';
import { readTail } from '../../agent/sandbox-io';
import type { PilotRecord } from './pilot-record';

export interface LocalLaunchEvents {
  launched(uid: string): void;
  launchFailed(uid: string, error: { message: string }): void;
  exited(
    uid: string,
    exit: { exitCode: number | null; signal: string | null; stderr: string },
  ): void;
}

/**
 * Starts an agent as a child process of the client: its config in the pilot sandbox, its
 * stdout/stderr in agent.out/agent.err there. The agent holds our end of a pipe on stdin, so
 * it notices when the client dies and shuts itself down.
 */
export class LocalLauncher {
  private readonly children = new Map<string, ChildProcess>();
  private readonly agentMain = compiledSibling(__dirname, '../../agent/main');

  constructor(
    private readonly events: LocalLaunchEvents,
    private readonly log: Logger,
  ) {}

  launch(pilot: PilotRecord, cfg: AgentConfig): void {
    void this.start(pilot, cfg).catch((e: unknown) => {
      this.log.error('agent launch failed', { pilot: pilot.uid, ...errorMeta(e) });
      this.events.launchFailed(pilot.uid, { message: (e as Error).message });
    });
  }

  kill(uid: string): void {
    const child = this.children.get(uid);
    if (child?.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }

  /** Pids of agents still running (for tests and shutdown). */
  pids(): number[] {
    return [...this.children.values()]
      .map((c) => c.pid)
      .filter((p): p is number => p !== undefined);
  }

  private async start(pilot: PilotRecord, cfg: AgentConfig): Promise<void> {
    await fsp.mkdir(pilot.sandbox, { recursive: true });
    const cfgFile = `${pilot.sandbox}/agent.json`;
    await fsp.writeFile(cfgFile, JSON.stringify(cfg, null, 2));
    const out = openSync(`${pilot.sandbox}/agent.out`, 'a');
    const err = openSync(`${pilot.sandbox}/agent.err`, 'a');
    let child: ChildProcess;
    try {
      child = spawn(process.execPath, [this.agentMain, cfgFile], { stdio: ['pipe', out, err] });
    } finally {
      closeSync(out);
      closeSync(err);
    }
    this.children.set(pilot.uid, child);
    child.stdin?.on('error', () => undefined); // EPIPE once the agent is gone
    child.once('spawn', () => this.events.launched(pilot.uid));
    child.once('error', (e) => {
      if (child.pid === undefined) this.events.launchFailed(pilot.uid, { message: e.message });
    });
    child.once('exit', (exitCode, signal) => {
      this.children.delete(pilot.uid);
      void readTail(`${pilot.sandbox}/agent.err`, 1_024).then((stderr) =>
        this.events.exited(pilot.uid, { exitCode, signal, stderr }),
      );
    });
  }
}
