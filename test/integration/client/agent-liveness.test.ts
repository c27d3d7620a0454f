import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { ask } from '../../../src/cli/control-client';
import { clockTime } from '../../../src/cli/status-format';
import type { AgentConfig, PilotLiveness, SessionStatus } from '../../../src/generated';
import { silentLogger } from '../../../src/lib/logger';
import { ControlBus } from '../../../src/transport/control-bus';
import { runCli } from '../../support/cli';
import { agentTrace } from '../../support/client-child';
import { fixtures, type Fixture } from '../../support/session-fixture';
import { until } from '../../support/until';

// A real local pilot whose agent is stopped (SIGSTOP): the client shows it unknown after 3 s of
// silence, with the time it was last heard, well before it would be declared lost (30 s), and
// ok again once it runs on (SIGCONT).

/** The pilot's liveness as the session's control socket answers `status`. */
async function statusLiveness(fx: Fixture): Promise<PilotLiveness | undefined> {
  const reply = await ask(fx.session.dir, { op: 'status' });
  if (reply?.ok !== true) throw new Error(`no status from ${fx.session.dir}`);
  return reply.result.pilots.find((p) => p.uid === fx.pilot.uid)?.liveness;
}

async function activePilot(fx: Fixture): Promise<number> {
  await fx.pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 30_000 });
  const pid = agentTrace(fx.session.dir, fx.pilot.uid).pid;
  if (pid === undefined) throw new Error('no agent pid in the journal');
  return pid;
}

describe('an active pilot whose agent is silent shows as unknown until it is heard again', () => {
  const fixture = fixtures();

  it('SIGSTOP: pilot.liveness, the status reply and `pilotfish status` say UNKNOWN since it was last heard; SIGCONT: ok', async () => {
    const fx = await fixture.open({ cores: 1 });
    const pid = await activePilot(fx);
    expect(fx.pilot.liveness).toEqual({ state: 'ok', silentParts: [] });
    expect(await statusLiveness(fx)).toEqual({ state: 'ok', silentParts: [] });
    const stopped = Date.now();
    process.kill(pid, 'SIGSTOP');
    try {
      const l = await until(
        () => fx.pilot.liveness,
        (x) => x?.state === 'unknown',
        'the pilot unknown',
        10_000,
      );
      // after 3 heartbeat periods (1 s each) of silence, since the last one heard (before the
      // stop; the agent beats every second, later on a loaded machine)
      expect(Date.now() - l!.since!).toBeGreaterThanOrEqual(3_000);
      expect(l!.since).toBeLessThanOrEqual(stopped);
      expect(l!.since).toBeGreaterThan(stopped - 5_000);
      expect(l!.silentParts).toEqual([]);
      expect(fx.pilot.state).toBe('PMGR_ACTIVE');
      expect(await statusLiveness(fx)).toEqual(l);
      const json = await runCli(['status', '--json', fx.session.dir]);
      const st = JSON.parse(json.stdout) as SessionStatus;
      expect(st.pilots[0]!.liveness).toEqual(l);
      const text = await runCli(['status', fx.session.dir]);
      expect(text.stdout).toContain(`PMGR_ACTIVE (UNKNOWN: silent since ${clockTime(l!.since!)}, `);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await until(
      () => fx.pilot.liveness,
      (x) => x?.state === 'ok',
      'the pilot heard again',
      10_000,
    );
    expect(fx.pilot.liveness).toEqual({ state: 'ok', silentParts: [] });
    expect(await statusLiveness(fx)).toEqual({ state: 'ok', silentParts: [] });
    expect(fx.pilot.state).toBe('PMGR_ACTIVE');
  }, 60_000);

  it("shows the parts an agent's heartbeat says are silent while the pilot is ok, kept while it is silent itself", async () => {
    const fx = await fixture.open({ cores: 1 });
    const pid = await activePilot(fx);
    // speaks as the agent does: its bootstrap file's addresses and keys
    const cfg = JSON.parse(
      readFileSync(path.join(fx.pilot.sandbox, 'agent.json'), 'utf8'),
    ) as AgentConfig;
    const bus = new ControlBus(
      { in: cfg.addresses.controlUp, out: cfg.addresses.controlDown },
      cfg.session,
      silentLogger,
      cfg.curve,
    );
    const n3 = { part: 'sub-agent n3', since: Date.now() - 5_000 };
    let beats: NodeJS.Timeout | undefined;
    let lastBeat = 0;
    // the real agent is stopped: only these heartbeats, each naming n3, are heard
    process.kill(pid, 'SIGSTOP');
    try {
      await bus.ready();
      const beat = (): void => {
        lastBeat = Date.now();
        void bus.publish({ type: 'agent_heartbeat', pilot: fx.pilot.uid, silent: [n3] });
      };
      beat();
      beats = setInterval(beat, 500);
      const ok = { state: 'ok', silentParts: [n3] };
      await until(
        () => fx.pilot.liveness,
        (x) => x?.silentParts.length === 1,
        'n3 silent',
        10_000,
      );
      expect(fx.pilot.liveness).toEqual(ok);
      expect(await statusLiveness(fx)).toEqual(ok);
      const text = await runCli(['status', fx.session.dir]);
      expect(text.stdout).toContain(`\n    silent: sub-agent n3 since ${clockTime(n3.since)}, `);
      expect(text.stdout).not.toContain('UNKNOWN');
      // no heartbeat at all now: unknown since the last one, its parts as it last said
      clearInterval(beats);
      const last = lastBeat;
      const l = await until(
        () => fx.pilot.liveness,
        (x) => x?.state === 'unknown',
        'the pilot unknown',
        10_000,
      );
      // when the last heartbeat was heard, not when the silence was judged (3 s later)
      expect(l!.since).toBeGreaterThanOrEqual(last);
      expect(l!.since).toBeLessThan(last + 2_500);
      expect(l!.silentParts).toEqual([n3]);
    } finally {
      clearInterval(beats);
      process.kill(pid, 'SIGCONT');
      await bus.close();
    }
    // the real agent's heartbeats name no silent part
    await until(
      () => fx.pilot.liveness,
      (x) => x?.state === 'ok' && x.silentParts.length === 0,
      'the pilot heard again, no part silent',
      10_000,
    );
  }, 60_000);
});
