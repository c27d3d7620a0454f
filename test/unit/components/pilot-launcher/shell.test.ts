import { describe, expect, it } from '@jest/globals';
import type { PilotLauncher } from '../../../../src/components/pilot-launcher/launcher';
import { PILOT_LAUNCHERS } from '../../../../src/components/pilot-launcher/registry';
import { PilotLauncherShell } from '../../../../src/components/pilot-launcher/shell';
import type { AgentConfig } from '../../../../src/generated';
import { silentLogger } from '../../../../src/lib/logger';
import { FakeClock } from '../../../support/fake-clock';
import { pilotIn } from '../../../support/fixtures';

// The shell's own logic: routing by resource and forwarding launcher reports into the core.
// Launches that start processes are covered by the integration tests (client/, slurm/); here
// `local` is a stand-in that records what it is asked and starts nothing.

interface Fx {
  shell: PilotLauncherShell;
  clock: FakeClock;
  journal: unknown[];
  states: string[];
  /** What the local stand-in was asked. */
  asked: string[];
}

function fixture(): Fx {
  const clock = new FakeClock();
  const journal: unknown[] = [];
  const states: string[] = [];
  const asked: string[] = [];
  const local: PilotLauncher = {
    capacities: (ds) => Promise.resolve(ds.map(() => ({ cores: 1, gpus: 0 }))),
    agentConfig: (_p, common) => ({ ...common, resource: 'local' }),
    launch: (p, cfg) => void asked.push(`launch ${p.uid} ${JSON.stringify(cfg)}`),
    kill: (uid) => void asked.push(`kill ${uid}`),
    adopt: (p, trace) => void asked.push(`adopt ${p.uid} ${JSON.stringify(trace)}`),
    close: () => void asked.push('close'),
  };
  const shell = new PilotLauncherShell({
    journal: { append: (e) => journal.push(e) },
    control: { publish: () => Promise.resolve() },
    notify: (ns) => states.push(...ns.map((n) => `${n.uid} ${n.state}`)),
    ended: () => undefined,
    agentConfig: (rec) => ({ pilot: rec.uid }) as AgentConfig,
    clock,
    log: silentLogger,
    shutdownGraceMs: 1_000,
    launchers: { ...PILOT_LAUNCHERS, local: () => local },
  });
  return { shell, clock, journal, states, asked };
}

describe('PilotLauncherShell', () => {
  it('sizes a mixed bulk with each resource’s launcher, in the order given', async () => {
    const { shell } = fixture();
    await expect(
      shell.capacities([
        { resource: 'local', cores: 3 },
        { resource: 'pbs', nodes: 2, cores: 4, gpus: 1 },
        { resource: 'lsf', cores: 5 },
      ]),
    ).resolves.toEqual([
      { cores: 1, gpus: 0 },
      { cores: 8, gpus: 2 },
      { cores: 5, gpus: 0 },
    ]);
  });

  it('launches with the resource’s agent config and journals the trace before the core hears', () => {
    const { shell, journal, states, asked } = fixture();
    shell.core.onSubmit([pilotIn('PMGR_LAUNCHING_PENDING', { uid: 'p1' })]);
    expect(asked).toEqual(['launch p1 {"pilot":"p1","resource":"local"}']);
    shell.launched('p1', { pid: 4242 });
    expect(journal).toEqual([{ t: 'agent', pilot: 'p1', pid: 4242 }]);
    expect(states).toEqual(['p1 PMGR_LAUNCHING', 'p1 PMGR_ACTIVE_PENDING']);
  });

  it('kills through the launcher of the pilot’s resource once the shutdown grace has passed', () => {
    const { shell, clock, states, asked } = fixture();
    shell.core.onSubmit([pilotIn('PMGR_LAUNCHING_PENDING', { uid: 'p1' })]);
    shell.launched('p1', { pid: 4242 });
    shell.core.onCancel(['p1']);
    clock.advance(1_000);
    expect(asked.slice(1)).toEqual(['kill p1']);
    shell.agentExited('p1', { exitCode: null, signal: 'SIGKILL', stderr: '' });
    expect(states.at(-1)).toBe('p1 CANCELED');
    shell.close();
    expect(asked.slice(2)).toEqual(['close']);
  });

  it('fails a pilot of a resource that cannot submit with E_UNSUPPORTED', async () => {
    const { shell, states } = fixture();
    const pilot = pilotIn('PMGR_LAUNCHING_PENDING', {
      uid: 'p2',
      description: { resource: 'pbs' },
    });
    shell.core.onSubmit([pilot]);
    await Promise.resolve();
    expect(states).toEqual(['p2 PMGR_LAUNCHING', 'p2 FAILED']);
    expect(pilot.reason?.code).toBe('E_UNSUPPORTED');
  });

  it('adopts an agent by its trace, and fails a pilot whose launch left no trace', () => {
    const { shell, states, asked } = fixture();
    const queued = pilotIn('PMGR_ACTIVE_PENDING', { uid: 'p3' });
    shell.adopt(queued, { pid: 77 });
    expect(asked).toEqual(['adopt p3 {"pid":77}']);
    const lost = pilotIn('PMGR_LAUNCHING', { uid: 'p4' });
    shell.adopt(lost, {});
    expect(states).toEqual(['p4 FAILED']);
    expect(lost.reason?.code).toBe('E_LAUNCH');
  });
});
