/**
 * The requests of the Node spawner helper (main.ts) checked as pf-spawner.c checks them:
 * the shape of each line, and the strings the kernel would refuse. No run-time imports: the
 * helper starts fast.
 */
import type { KillRequest, SpawnRequest } from './protocol';

/** An object whose values are all strings (env, cgroupLimits). */
function isStrings(o: unknown): o is Record<string, string> {
  return (
    typeof o === 'object' &&
    o !== null &&
    !Array.isArray(o) &&
    Object.values(o).every((v) => typeof v === 'string')
  );
}

export function isSpawnRequest(m: unknown): m is SpawnRequest {
  const s = m as Partial<SpawnRequest>;
  return (
    typeof s.uid === 'string' &&
    typeof s.executable === 'string' &&
    Array.isArray(s.args) &&
    s.args.every((a) => typeof a === 'string') &&
    isStrings(s.env) &&
    typeof s.cwd === 'string' &&
    (s.stream === undefined
      ? typeof s.stdoutPath === 'string' && typeof s.stderrPath === 'string'
      : isStream(s.stream) && s.stdoutPath === undefined && s.stderrPath === undefined) &&
    (s.killScope === undefined || s.killScope === 'process') &&
    (s.cpus === undefined || typeof s.cpus === 'string') &&
    (s.after === undefined || typeof s.after === 'string') &&
    (s.cgroups === undefined ||
      (Array.isArray(s.cgroups) && s.cgroups.every((c) => typeof c === 'string'))) &&
    (s.cgroupLimits === undefined || isStrings(s.cgroupLimits)) &&
    (s.mkdir === undefined || typeof s.mkdir === 'string') &&
    (s.recycle === undefined || typeof s.recycle === 'boolean') &&
    (s.files === undefined ||
      (Array.isArray(s.files) &&
        s.files.every(
          (f) =>
            typeof f === 'object' &&
            f !== null &&
            typeof f.path === 'string' &&
            typeof f.content === 'string',
        )))
  );
}

/** `{attempt, capBytes?}`: attempt a whole number in [0, 2^32) (a frame's u32), a cap >= 1. */
function isStream(v: unknown): boolean {
  const { attempt: a, capBytes: c } = (v ?? {}) as { attempt?: unknown; capBytes?: unknown };
  return (
    typeof v === 'object' &&
    Number.isInteger(a) &&
    (a as number) >= 0 &&
    (a as number) < 2 ** 32 &&
    (c === undefined || (Number.isSafeInteger(c) && (c as number) >= 1))
  );
}

/** The signals a kill request may name (KillSignal, of protocol.ts, which is types only). */
const KILL_SIGNALS: ReadonlySet<string> = new Set([
  'SIGKILL',
  'SIGTERM',
  'SIGINT',
  'SIGHUP',
  'SIGQUIT',
  'SIGUSR1',
  'SIGUSR2',
  'SIGALRM',
]);

export function isKillRequest(m: unknown): m is KillRequest {
  const k = m as { uid?: unknown; signal?: unknown };
  return typeof k.uid === 'string' && typeof k.signal === 'string' && KILL_SIGNALS.has(k.signal);
}

/** The first string the kernel would get that holds a NUL byte, named as pf-spawner names it. */
export function nulField(m: SpawnRequest): string | undefined {
  const has = (s: string): boolean => s.includes('\0');
  if (has(m.executable)) return 'executable';
  const arg = m.args.findIndex(has);
  if (arg >= 0) return `args[${arg}]`;
  for (const [k, v] of Object.entries(m.env)) if (has(k) || has(v)) return 'env';
  if (has(m.cwd)) return 'cwd';
  if (m.mkdir !== undefined && has(m.mkdir)) return 'mkdir';
  if (m.stdoutPath !== undefined && has(m.stdoutPath)) return 'stdoutPath';
  if (m.stderrPath !== undefined && has(m.stderrPath)) return 'stderrPath';
  const file = (m.files ?? []).findIndex((f) => has(f.path));
  if (file >= 0) return `files.path[${file}]`;
  const cgroup = (m.cgroups ?? []).findIndex(has);
  return cgroup >= 0 ? `cgroups[${cgroup}]` : undefined;
}
