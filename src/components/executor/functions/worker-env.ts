/**
 * The environment and working directory of a Node worker's calls (worker-main.ts). In protocol 2
 * a call brings them as changes to the previous call's (`env`, `unset`, `cwd`): absorb() folds
 * each call's changes in, in the order received (a call dropped or failed to import included),
 * enter() makes process.env and the directory the call's, changing only what differs from the
 * last call entered, and restore() brings the worker's own back once no call is left (the calls'
 * environment is kept, for the next call's changes).
 *
 * process.env becomes a Proxy that notes a change made through it: a function that changes a
 * variable itself is seen, and the next call sets its whole environment again. The worker's own
 * changes go to the environment object under it.
 */
import type { WireCall } from './protocol';

export class CallEnvironment {
  /** The calls' variables over the worker's own, as the changes received so far make them. */
  private readonly vars = new Map<string, string>();
  /** The calls' working directory. */
  dir: string;
  /** Whether process.env holds `vars` (from the first call after idle until no call is left). */
  private entered = false;
  /** Keys of `vars` changed since process.env last held it (while entered). */
  private changed: string[] = [];
  /** What the variables set in process.env were before (restored once no call is left). */
  private readonly saved = new Map<string, string | undefined>();
  /** The directory the process is in. */
  private cwd: string;
  private readonly env: NodeJS.ProcessEnv;
  private touched = false;

  constructor(private readonly homeDir: string) {
    this.dir = homeDir;
    this.cwd = homeDir;
    this.env = process.env;
    const touch = (): void => {
      this.touched = true;
    };
    process.env = new Proxy(this.env, {
      set: (t, k, v) => (touch(), Reflect.set(t, k, v)),
      deleteProperty: (t, k) => (touch(), Reflect.deleteProperty(t, k)),
      defineProperty: (t, k, d) => (touch(), Reflect.defineProperty(t, k, d)),
    });
  }

  /** Takes in the changes a call brings to the calls' environment and directory. */
  absorb(c: WireCall): void {
    if (c.unset !== undefined) {
      for (const k of c.unset) {
        this.vars.delete(k);
        if (this.entered) this.changed.push(k);
      }
    }
    const env = c.env;
    if (env !== undefined) {
      for (const k of Object.keys(env)) {
        this.vars.set(k, env[k]!);
        if (this.entered) this.changed.push(k);
      }
    }
    if (c.cwd !== undefined) this.dir = c.cwd === '' ? this.homeDir : c.cwd;
  }

  /** Makes process.env and the directory the call's, changing only what differs. */
  enter(): void {
    if (this.entered && !this.touched) {
      for (const k of this.changed) this.put(k);
    } else {
      // the first call since idle, or a function changed process.env itself: all of it again
      for (const k of this.saved.keys()) if (!this.vars.has(k)) this.restoreKey(k);
      for (const k of this.vars.keys()) this.put(k);
      this.entered = true;
      this.touched = false;
    }
    this.changed = [];
    if (this.dir !== this.cwd) {
      this.cwd = this.homeDir; // if chdir throws, the worker is still where it started
      process.chdir(this.dir);
      this.cwd = this.dir;
    }
  }

  /** No call left: the worker's own environment and directory again. */
  restore(): void {
    for (const k of this.saved.keys()) this.restoreKey(k);
    this.entered = false;
    this.touched = false;
    this.changed = [];
    if (this.cwd !== this.homeDir) {
      this.cwd = this.homeDir;
      process.chdir(this.homeDir);
    }
  }

  /** process.env[k] as `vars` has it: its value, or the worker's own. */
  private put(k: string): void {
    const v = this.vars.get(k);
    if (v === undefined) {
      if (this.saved.has(k)) this.restoreKey(k);
      return;
    }
    if (!this.saved.has(k)) this.saved.set(k, this.env[k]);
    this.env[k] = v;
  }

  private restoreKey(k: string): void {
    const before = this.saved.get(k);
    this.saved.delete(k);
    if (before === undefined) delete this.env[k];
    else this.env[k] = before;
  }
}
