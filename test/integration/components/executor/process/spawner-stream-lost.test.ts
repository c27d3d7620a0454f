/**
 * Output 'stream' on a full disk (a real tmpfs): a write of the stream file that fails loses its
 * frames, and the task goes on (output never stops a task). Both helpers tell which task
 * attempts lost frames (a lost event, before those tasks' exits), so the exit says why
 * (ExitedEvent.output.lost) and the Executor ends the task with a reason.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import * as path from 'node:path';
import type { SpawnSpec } from '../../../../../src/components/executor/effects';
import {
  SpawnerPool,
  type SpawnerHelper,
} from '../../../../../src/components/executor/process/spawner-pool';
import { deferred, withTimeout } from '../../../../../src/lib/deferred';
import type { Logger } from '../../../../../src/lib/logger';
import { closedGate, type FlockGate } from '../../../../support/flock-gate';
import { padStreamFile } from '../../../../support/stream-page';
import { tmpfsPerTest, tmpfsUnavailable, type Tmpfs } from '../../../../support/tmpfs';
import { Events, WAIT_MS, describeEachHelper, tempSandboxes } from './spawner-fixtures';
import { StreamFrames, streamSpec } from './stream-fixtures';

const { dir: tempDir } = tempSandboxes('pf-stream-lost-');

function sh(script: string, ...args: string[]): [string, string[]] {
  return ['/bin/sh', ['-c', script, 'sh', ...args]];
}

const body = (helper: SpawnerHelper): void => {
  const mount = tmpfsPerTest('256k');
  let pool: SpawnerPool | undefined;
  let gate: FlockGate | undefined;
  afterEach(async () => {
    await pool?.close();
    pool = undefined;
    gate?.remove();
    gate = undefined;
  });

  /**
   * A pool of one helper whose stream file is on a fresh tmpfs, ending at a page boundary;
   * `failed`: its first failed write.
   */
  async function start() {
    const fsys: Tmpfs = mount();
    const events = new Events();
    const failedWrite = deferred<string>();
    const log: Logger = {
      error: () => undefined,
      warn: (m, meta) => {
        const message = (meta as { message?: string } | undefined)?.message ?? '';
        if (m === 'spawner helper reported an error') failedWrite.resolve(message);
      },
      info: () => undefined,
      debug: () => undefined,
      child: () => log,
    };
    const streamDir = path.join(fsys.dir, 'output');
    const p = (pool = await SpawnerPool.start({
      count: 1,
      logger: log,
      handlers: events.handlers,
      helper,
      streamDir,
    }));
    const file = p.streamFiles()[0]!;
    padStreamFile(file);
    const frames = new StreamFrames(streamDir, () => p.streamFiles());
    const failed = () => withTimeout(failedWrite.promise, WAIT_MS, 'a failed write reported');
    return { fsys, p, events, file, frames, failed };
  }

  const spec = (executable: string, args: string[] = []): SpawnSpec =>
    streamSpec(tempDir(), executable, args);

  const lostText = (file: string) =>
    `cannot write the output stream '${file}': no space left on device (ENOSPC)`;

  it('a task that writes while the disk is full: its exit says why its output was lost, and carries its tails', async () => {
    const { fsys, p, events, file, frames, failed } = await start();
    fsys.fill();
    const s = spec(...sh('echo lost; echo also >&2'));
    p.spawn(s);
    const exit = await events.exit(s.uid);
    expect(exit.exitCode).toBe(0);
    expect(exit.output).toEqual({
      stdout: 'lost\n',
      stderr: 'also\n',
      stdoutBytes: 5,
      stderrBytes: 5,
      lost: lostText(file),
    });
    expect(await failed()).toBe(lostText(file).replace(' (ENOSPC)', ''));
    expect(frames.of(s.uid)).toEqual([]); // none of it, not even half a frame
    // space back: a new task's frames are written, and its exit has nothing to say
    fsys.free();
    const next = spec(...sh('echo kept'));
    p.spawn(next);
    expect((await events.exit(next.uid)).output?.lost).toBeUndefined();
    await frames.untilEnded([next.uid]);
    expect(frames.data(next.uid, 'stdout').toString()).toBe('kept\n');
  });

  it('a running task whose early frames were lost: its exit says so, though its later ones were written', async () => {
    const { fsys, p, events, file, frames, failed } = await start();
    gate = await closedGate(path.join(tempDir(), `gate.${helper}`));
    fsys.fill();
    const s = spec(
      ...sh('echo early; flock -s "$1" true; echo late', `${tempDir()}/gate.${helper}`),
    );
    const other = spec('/bin/sleep', ['30']); // runs on, and lost nothing
    p.spawn(other);
    p.spawn(s);
    await failed(); // 'early' was not written
    fsys.free();
    await gate.open();
    const exit = await events.exit(s.uid);
    expect(exit.output?.lost).toBe(lostText(file));
    await frames.untilEnded([s.uid]);
    expect(frames.data(s.uid, 'stdout').toString()).toBe('late\n');
    p.kill(other.uid, 'SIGKILL');
    const killed = await events.exit(other.uid);
    expect([killed.signal, killed.output?.lost]).toEqual(['SIGKILL', undefined]);
  });
};

if (tmpfsUnavailable === undefined) {
  describeEachHelper('output stream on a full disk', body);
} else {
  describe.skip(`output stream on a full disk (skipped: ${tmpfsUnavailable})`, () => undefined);
}
