import { afterEach, describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { agentWorkerOptions } from '../../../src/agent/worker-options';
import type { AgentConfig } from '../../../src/generated';
import { silentLogger } from '../../../src/lib/logger';
import { UpdateWorker } from '../../../src/updater/update-worker';
import { readUndelivered } from '../../../src/updater/undelivered';
import { makeNotes } from '../../integration/updater/helpers';

describe("an agent's UpdateWorkers", () => {
  const dirs: string[] = [];
  let worker: UpdateWorker | undefined;
  afterEach(async () => {
    await worker?.close(10);
    worker = undefined;
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });

  it("spill what waits for an absent store past their memory limit into the pilot's sandbox, and keep what they give up there", async () => {
    const sandbox = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-agent-spill-'));
    dirs.push(sandbox);
    const unused = 'tcp://127.0.0.1:9'; // nothing answers: no batch is acknowledged
    const cfg: AgentConfig = {
      session: 's',
      pilot: 'pilot.0003',
      sandbox,
      sessionDir: sandbox,
      cores: 1,
      gpus: 0,
      runtimeMin: 1,
      addresses: {
        agentInput: unused,
        managerOutput: unused,
        controlUp: unused,
        controlDown: unused,
        store: unused,
      },
    };
    const opts = agentWorkerOptions(cfg, 1, { storeAddress: unused }, silentLogger);
    expect(opts).toMatchObject({
      name: 'pilot.0003.uw1',
      spill: { dir: sandbox },
      keepUndeliveredIn: sandbox,
    });
    const w = (worker = UpdateWorker.start(opts));
    // the default bounds: 8 batches in flight (the first take went alone, then 1,024 each),
    // 50,000 in memory, the rest on disk
    const taken = [];
    for (let i = 0; i < 60_000; i += 1_000) {
      const notes = makeNotes(1_000, `t${i}`);
      taken.push(...notes);
      w.take(notes);
    }
    expect(w.stats()).toMatchObject({ inFlight: 8, held: 50_000 });
    expect(w.stats().spilled).toBe(60_000 - 50_000 - 1_000 - 7 * 1_024);
    expect(fs.readdirSync(sandbox)).toEqual([path.basename(w.spillFile!)]);
    await w.close(10);
    expect(w.stats().givenUp).toBe(60_000);
    // the spill file is gone; what was given up waits for a resume, in order, every one of it
    const kept = readUndelivered(sandbox, 's', 'pilot.0003', silentLogger);
    expect(fs.readdirSync(sandbox).map((f) => path.join(sandbox, f))).toEqual(kept.files);
    expect(kept.files).toHaveLength(1);
    expect(kept.notifications).toEqual(taken);
  });
});
