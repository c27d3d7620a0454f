import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { nvidiaGpus } from '../../../src/lib/gpus';
import { fixtures } from '../../support/session-fixture';

/**
 * CUDA_VISIBLE_DEVICES (and PF_GPUS) seen by each task match the GPUs of its slot. The pilot
 * declares PILOTFISH_GPUS GPUs (default 4, fake: nothing here touches a GPU);
 * scripts/gpu-check.sh runs this file on a real NVIDIA machine with the real count, and with
 * PILOTFISH_REAL_GPUS=1 each task also asks nvidia-smi about the GPUs it was given.
 */
const GPUS = Number(process.env.PILOTFISH_GPUS ?? 4);
const REAL = process.env.PILOTFISH_REAL_GPUS === '1';
const SHOW = REAL
  ? 'echo "cvd=$CUDA_VISIBLE_DEVICES pf=$PF_GPUS"; nvidia-smi --query-gpu=index --format=csv,noheader -i "$CUDA_VISIBLE_DEVICES"'
  : 'echo "cvd=$CUDA_VISIBLE_DEVICES pf=$PF_GPUS"';

describe(`GPU binding on a pilot with ${GPUS} ${REAL ? 'real' : 'fake'} GPUs`, () => {
  const fixture = fixtures();

  it('gives each task the GPUs of its slot, whole, shared or by index', async () => {
    const fx = await fixture.open({ cores: 2 * GPUS + 2, gpus: GPUS });
    const whole = Array.from({ length: GPUS }, () => ({
      executable: '/bin/sh',
      arguments: ['-c', `${SHOW}; sleep 1`], // held together, so no two get the same GPU
      gpusPerRank: 1,
    }));
    const tasks = await fx.tmgr.submitTasks([
      ...whole,
      { executable: '/bin/sh', arguments: ['-c', SHOW], gpusPerRank: 0 },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    const seen = new Set<string>();
    for (const t of tasks.slice(0, GPUS)) {
      expect(t.state).toBe('DONE');
      const m = /^cvd=(\d+) pf=(\d+)$/m.exec(t.stdout ?? '');
      expect(m).not.toBeNull();
      expect(m![1]).toBe(m![2]);
      seen.add(m![1]!);
      if (REAL) expect(t.stdout).toContain(`\n${m![1]}\n`);
    }
    expect([...seen].sort()).toEqual(Array.from({ length: GPUS }, (_, i) => String(i)));
    expect(tasks[GPUS]!.stdout).toMatch(/^cvd= pf=$/m); // no GPU asked, none visible

    if (GPUS >= 2) {
      const [a, b, pinned] = await fx.tmgr.submitTasks([
        { executable: '/bin/sh', arguments: ['-c', `${SHOW}; sleep 1`], gpusPerRank: 0.5 },
        { executable: '/bin/sh', arguments: ['-c', `${SHOW}; sleep 1`], gpusPerRank: 0.5 },
        { executable: '/bin/sh', arguments: ['-c', SHOW], gpuIndices: [GPUS - 1] },
      ]);
      await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
      const gpuOf = (s: string | undefined): string => /^cvd=(\d+)/m.exec(s ?? '')?.[1] ?? '?';
      expect(gpuOf(a!.stdout)).toBe(gpuOf(b!.stdout)); // two halves share one GPU
      expect(gpuOf(pinned!.stdout)).toBe(String(GPUS - 1));
    }
  }, 60_000);

  it('shows every GPU to a daemon with gpusVisible, reserving none: a task that reserves them all still runs beside it', async () => {
    const fx = await fixture.open({ cores: 4, gpus: GPUS });
    const all = Array.from({ length: GPUS }, (_, i) => String(i)).join(',');
    // the daemon reads a FIFO until the reserving task has opened it: both hold their slots at once
    const go = path.join(fx.dir, 'go');
    execFileSync('mkfifo', [go]);
    const [daemon] = await fx.tmgr.submitTasks([
      {
        executable: '/bin/sh',
        arguments: ['-c', `${SHOW}; cat "$GO" > /dev/null`],
        environment: { GO: go },
        placement: { gpusVisible: true },
        timeoutS: 30,
      },
    ]);
    await fx.tmgr.waitTasks({
      uids: [daemon!.uid],
      states: ['AGENT_EXECUTING'],
      timeoutMs: 20_000,
    });
    const [reserving] = await fx.tmgr.submitTasks([
      {
        executable: '/bin/sh',
        arguments: ['-c', `${SHOW}; : > "$GO"`],
        environment: { GO: go },
        gpusPerRank: GPUS,
      },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect([daemon!.state, reserving!.state]).toEqual(['DONE', 'DONE']);
    expect(daemon!.stdout).toMatch(new RegExp(`^cvd=${all} pf=${all}$`, 'm'));
    expect(reserving!.stdout).toMatch(new RegExp(`^cvd=${all} pf=${all}$`, 'm'));
  }, 60_000);

  it("a local pilot that does not say how many GPUs takes the machine's (what the NVIDIA driver lists), and its agent has them", async () => {
    const fx = await fixture.open({ cores: 2 });
    expect(fx.pilot.gpus).toBe(nvidiaGpus());
    const [t] = await fx.tmgr.submitTasks([
      { executable: '/bin/sh', arguments: ['-c', SHOW], gpusPerRank: 0 },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect(t!.state).toBe('DONE');
    expect(fx.pilot.nodes.map((n) => n.gpus)).toEqual([nvidiaGpus()]);
  }, 60_000);

  it('fails a task asking a GPU index the pilot lacks, at once and saying so', async () => {
    const fx = await fixture.open({ cores: 2, gpus: GPUS });
    const [t] = await fx.tmgr.submitTasks([{ executable: '/bin/true', gpuIndices: [GPUS] }]);
    await fx.tmgr.waitTasks({ timeoutMs: 10_000 });
    expect(t!.state).toBe('FAILED');
    expect(t!.reason?.code).toBe('E_NEVER_FITS');
    expect(t!.reason?.message).toContain(`GPUs [${GPUS}]`);
    expect(t!.reason?.message).toContain(`${GPUS} GPUs`);
  });
});
