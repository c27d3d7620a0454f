import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { withTimeout } from '../../src/lib/deferred';

/** A closed gate: tasks that run `flock -s GATE …` wait until it opens. */
export interface FlockGate {
  /** Opens the gate; resolves once its holder has let go. */
  open(): Promise<void>;
  /** Kills the holder if it still holds the lock (a test that failed midway). */
  remove(): void;
}

/** Locks `path` exclusively (a `flock` process holding it) and resolves once it is held. */
export async function closedGate(path: string): Promise<FlockGate> {
  // holds the lock until its stdin closes
  const holder = spawn('flock', ['-x', path, '-c', 'echo locked; exec cat'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => holder.once('exit', () => resolve()));
  const gate: FlockGate = {
    open: () => {
      holder.stdin.end();
      return exited;
    },
    remove: () => {
      if (holder.exitCode === null && holder.signalCode === null) holder.kill('SIGKILL');
    },
  };
  try {
    await withTimeout(
      new Promise((resolve) => createInterface({ input: holder.stdout }).once('line', resolve)),
      10_000,
      `lock of ${path} held`,
    );
  } catch (e) {
    gate.remove();
    throw e;
  }
  return gate;
}
