/**
 * The environment and working directory of a Node worker's calls (main.ts). In protocol 2
 * a call brings them as changes to the previous call's (`env`, `unset`, `cwd`): absorb() folds
 * each call's changes in, in the order received (a call dropped or failed to import included),
 * and enter() makes process.env and the directory the call's, changing only what differs from
 * the last call entered. Between calls they stay as the last call left them: nothing of the
 * worker's runs then, and the next call would set them again.
 *
 * A function may change process.env itself. process.env is a Proxy over the real environment
 * object that notes a change made through it (set, delete, define), so such a change costs the
 * next call a full reset while calls that change nothing cost nothing: checking the variables
 * at each call would cost a getenv each. The worker's own writes go to the object under it. A
 * function that chdirs is seen through process.cwd(), which Node caches until a chdir.
 */
import type { WireCall } from './protocol';

/** Keys changed since the last enter() beyond which a full reset is cheaper than the list. */
const MAX_CHANGED = 64;

export class CallEnvironment {
  /** The calls' variables over the worker's own, as the changes received so far make them. */
  private readonly vars = new Map<string, string>();
  /** The calls' working directory. */
  dir: string;
  /** Keys of `vars` changed since process.env last held it. */
  private changed: string[] = [];
  /** The worker's own value of each variable a call set (undefined: it had none). */
  private readonly saved = new Map<string, string | undefined>();
  /** The directory the last enter() made current, and process.cwd() just after it. */
  private cwd: string;
  private cwdSeen: string;
  /** The real environment, and the Proxy that process.env is. */
  private readonly env: NodeJS.ProcessEnv;
  private readonly watched: NodeJS.ProcessEnv;
  /** A function changed process.env since the last enter(): set all of the call's again. */
  private touched = false;

  constructor(private readonly homeDir: string) {
    this.dir = homeDir;
    this.cwd = homeDir;
    this.cwdSeen = process.cwd();
    this.env = process.env;
    const touch = (): void => {
      this.touched = true;
    };
    // Reflect on the target itself: process.env's own rules apply (values become strings)
    this.watched = new Proxy(this.env, {
      set: (t, k, v) => (touch(), Reflect.set(t, k, v)),
      deleteProperty: (t, k) => (touch(), Reflect.deleteProperty(t, k)),
      defineProperty: (t, k, d) => (touch(), Reflect.defineProperty(t, k, d)),
    });
    process.env = this.watched;
  }

  /** Takes in the changes a call brings to the calls' environment and directory. */
  absorb(c: WireCall): void {
    if (c.unset !== undefined) {
      for (const k of c.unset) {
        this.vars.delete(k);
        this.changed.push(k);
      }
    }
    const env = c.env;
    if (env !== undefined) {
      for (const k of Object.keys(env)) {
        this.vars.set(k, env[k]!);
        this.changed.push(k);
      }
    }
    if (c.cwd !== undefined) this.dir = c.cwd === '' ? this.homeDir : c.cwd;
    // calls dropped one after the other would pile their changes up
    if (this.changed.length > MAX_CHANGED) this.touched = true;
  }

  /**
   * Makes process.env and the directory the call's, changing only what differs. Throws when the
   * directory cannot be entered (the call fails): the process stays where it was.
   */
  enter(): void {
    if (process.env !== this.watched) {
      // a function replaced process.env: the next calls see the environment again
      process.env = this.watched;
      this.touched = true;
    }
    if (this.touched) {
      for (const k of this.saved.keys()) if (!this.vars.has(k)) this.restoreKey(k);
      for (const k of this.vars.keys()) this.put(k);
      this.touched = false;
    } else {
      for (const k of this.changed) this.put(k);
    }
    this.changed = [];
    if (this.dir !== this.cwd || !this.stillIn()) {
      process.chdir(this.dir);
      this.cwd = this.dir;
      this.cwdSeen = process.cwd();
    }
  }

  /** Whether the process is where enter() left it (a function may have chdir'd since). */
  private stillIn(): boolean {
    try {
      return process.cwd() === this.cwdSeen;
    } catch {
      return false; // the directory was removed: enter it (or fail) again
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
