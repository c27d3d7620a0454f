/**
 * The Node worker's capture of what its calls print (init's maxOutputBytes > 0): once
 * installed, process.stdout.write and process.stderr.write (console.log and console.error go
 * through them) keep what is written while a call runs for that call (CallOutput), and pass
 * everything else to the log files as before: a module's import, a timer or promise of a call
 * that was answered. What a call's own child processes write to the inherited fds 1 and 2,
 * and a direct write to those fds (fs.writeSync(1, ...)), goes to the log files too.
 *
 * A call's capture starts just before its function is called and ends with its answer (its
 * result, its throw, or its cancel while it runs). Calls run one at a time, so a write while
 * one runs is that call's; one from something an earlier call left running is counted in it.
 * A call that prints nothing costs two assignments.
 */
import { writeSync } from 'node:fs';
import { CallOutput, chunkBytes, type StreamIndex } from './call-output';
import type { WireResult } from './protocol';

type Write = (chunk: unknown, encoding?: unknown, cb?: unknown) => boolean;

export class OutputCapture {
  /** The call whose output is kept now; -1: none. */
  private id = -1;
  /** The call's own cap, if it has one (read when it first prints). */
  private callCap: number | undefined;
  private out: CallOutput | undefined;
  private max = 0;
  private installed = false;

  /** Takes over the writes of process.stdout and process.stderr (once); `max`: a call's cap. */
  install(max: number): void {
    this.max = max;
    if (this.installed) return;
    this.installed = true;
    this.hook(process.stdout, 0);
    this.hook(process.stderr, 1);
  }

  /** Call `id` is about to be called: what is written from now on is its own, up to `cap`. */
  start(id: number, cap: number | undefined): void {
    this.id = id;
    this.callCap = cap;
    this.out = undefined;
  }

  /** `r` answers a call: if it is the one captured, its output goes with it and the capture ends. */
  end(r: WireResult): void {
    if (r.id !== this.id) return;
    this.id = -1;
    const out = this.out;
    if (out === undefined) return;
    this.out = undefined;
    Object.assign(r, out.result());
  }

  /**
   * The worker ends while a call runs (a function called process.exit()): what it printed goes
   * to the log files, not lost with the worker.
   */
  spill(): void {
    const out = this.out?.result();
    this.id = -1;
    this.out = undefined;
    for (const [fd, bytes] of [
      [1, out?.stdout],
      [2, out?.stderr],
    ] as const) {
      if (bytes === undefined) continue;
      try {
        for (let at = 0; at < bytes.length;) at += writeSync(fd, bytes, at);
      } catch {
        // the log file is gone: nowhere to put it
      }
    }
  }

  private hook(stream: NodeJS.WriteStream, k: StreamIndex): void {
    const real = stream.write.bind(stream) as Write;
    const write: Write = (chunk, encoding, cb) => {
      if (this.id < 0) return real(chunk, encoding, cb);
      this.out ??= new CallOutput(Math.min(this.callCap ?? this.max, this.max));
      this.out.write(k, chunkBytes(chunk, encoding));
      const done = typeof encoding === 'function' ? encoding : cb;
      if (typeof done === 'function') process.nextTick(done);
      return true;
    };
    stream.write = write;
  }
}
